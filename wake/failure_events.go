package wake

import (
	"strconv"
	"time"

	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/streamdb"
)

// RunFailure is a failed handler run of one unit of work.
type RunFailure struct {
	Wake        Wake
	Key         string
	Seq         int64  // the unit's position in the stream
	Offset      string // the offset after it ("" when not known)
	Err         error
	Attempt     int
	MaxAttempts int
	RetryAt     time.Time // when it is tried again (not GiveUp)
	GiveUp      bool
}

// FailureEvents are what a failed run leaves on the entity's stream, wherever the
// handler runs: an error event, and, when the work is given up on, the inbox message
// marked failed.
func FailureEvents(f RunFailure) [][]byte {
	now := time.Now()
	var v rawjson.Object
	v.String("message", storableError(f.Err)).String("wake", f.Wake.Kind()).String("key", f.Key).
		String("offset", f.Offset).Int("attempt", int64(f.Attempt)).Int("max_attempts", int64(f.MaxAttempts))
	v.Bool("will_retry", !f.GiveUp)
	if !f.GiveUp {
		v.Time("retry_at", f.RetryAt)
	}
	v.Time("timestamp", now)
	events := [][]byte{streamdb.Event{Type: "error", Key: "error-" + strconv.FormatInt(f.Seq, 10) + "-" + strconv.Itoa(f.Attempt),
		Value: v.Bytes(), Operation: streamdb.OpInsert, Timestamp: now}.Marshal()}
	if _, ok := f.Wake.(InboxWake); ok && f.GiveUp {
		var u rawjson.Object
		u.String("status", "failed").Time("failed_at", now).String("error", storableError(f.Err)).Int("attempts", int64(f.Attempt))
		events = append(events, streamdb.Event{Type: inbox.EventType, Key: f.Key, Value: u.Bytes(),
			Operation: streamdb.OpUpdate, Timestamp: now}.Marshal())
	}
	return events
}
