package slashcmd

import (
	"encoding/json"
	"time"

	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/wire"
)

// EventType is the State Protocol event type of the slashCommands collection.
const EventType = "slash_command"

// Sources of an effective row.
const (
	SourceStatic  = "static"
	SourceDynamic = "dynamic"
)

// Layer is one owner's dynamic registration of a command.
type Layer struct {
	Name        string     `json:"name"`
	Description *string    `json:"description"`
	Arguments   []Argument `json:"arguments"`
	Owner       string     `json:"owner"`
	Version     *string    `json:"version"`
	UpdatedAt   string     `json:"updated_at"`
	// Position orders an entity's layers of one name in storage (the highest on top).
	// It is not part of the row clients see.
	Position int64 `json:"-"`
}

// Row is the effective command for one name, as materialized in the slashCommands
// collection. Every field is always written (absent ones as null), so that clients
// which merge updates shallowly never keep a stale owner or layer stack.
type Row struct {
	Key           string     `json:"key"`
	Name          string     `json:"name"`
	Description   *string    `json:"description"`
	Arguments     []Argument `json:"arguments"`
	Source        string     `json:"source"`
	Owner         *string    `json:"owner"`
	Version       *string    `json:"version"`
	UpdatedAt     string     `json:"updated_at"`
	DynamicLayers []Layer    `json:"dynamic_layers"`
}

// StaticRow is the effective row of a static definition.
func StaticRow(d Definition, at time.Time) Row {
	return Row{Key: d.Name, Name: d.Name, Description: d.Description, Arguments: d.Arguments,
		Source: SourceStatic, UpdatedAt: rawjson.ISOTime(at)}
}

// Event is the State Protocol insert or update event that materializes r. Every field is
// written (nil pointers and slices as null) because StreamDB merges updates shallowly.
func (r Row) Event(op string, txid string, at time.Time) []byte {
	value, _ := json.Marshal(r)
	return wire.Event{Type: EventType, Key: r.Key, Value: value, Operation: op, Txid: txid, Timestamp: at}.Marshal()
}

// DeleteEvent removes the row for name from the collection (deletes carry no value).
func DeleteEvent(name string, txid string, at time.Time) []byte {
	return wire.Event{Type: EventType, Key: name, Operation: wire.OpDelete, Txid: txid, Timestamp: at}.Marshal()
}
