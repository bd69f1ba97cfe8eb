// Package wire is what the server and the Go SDK both speak: the State Protocol event
// envelope, the wakes a handler gets and the scanner that finds them in an entity's
// stream, an entity's materialized state, and the run rows of a reply. It imports nothing
// from the database side, so a handler binary links no database driver.
package wire

import (
	"time"

	"github.com/entityd/entityd/internal/rawjson"
)

// State Protocol operations.
const (
	OpInsert = "insert"
	OpUpdate = "update"
	OpDelete = "delete"
	OpUpsert = "upsert"
)

// Event is a State Protocol change event: a typed, keyed change to a collection.
// Value and OldValue are raw JSON embedded byte for byte; a delete carries no Value.
type Event struct {
	Type      string
	Key       string
	Value     []byte
	OldValue  []byte
	Operation string
	Txid      string
	Timestamp time.Time
}

// Marshal renders the event as
// {"type","key","value"?,"old_value"?,"headers":{"operation","txid"?,"timestamp"?}}.
func (e Event) Marshal() []byte {
	var o rawjson.Object
	// the members' sizes plus room for names, quotes, escapes and the headers: one
	// allocation for an event that embeds a payload
	o.Grow(len(e.Type) + len(e.Key) + len(e.Value) + len(e.OldValue) + len(e.Txid) + 160)
	o.String("type", e.Type).String("key", e.Key)
	if e.Value != nil {
		o.Raw("value", e.Value)
	}
	if e.OldValue != nil {
		o.Raw("old_value", e.OldValue)
	}
	var h rawjson.Object
	h.String("operation", e.Operation)
	if e.Txid != "" {
		h.String("txid", e.Txid)
	}
	if !e.Timestamp.IsZero() {
		h.Time("timestamp", e.Timestamp)
	}
	o.Raw("headers", h.Bytes())
	return o.Bytes()
}
