package wire

import (
	"strconv"
	"time"

	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/internal/textpolicy"
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
// marked failed and a failed run (RunKey of the unit) bracketing the error, as
// Electric's runtime records a run that ended in an error: Electric's UI shows the
// error as the reply, and runFinished wake registrations on the entity fire with
// run_status failed. Attempts that will be retried leave no run: only the attempt
// that is kept (the successful one, or the last) ends the unit's run.
func FailureEvents(f RunFailure) [][]byte {
	now := time.Now()
	giveUpRun := f.GiveUp && f.Seq > 0
	var v rawjson.Object
	// error_code and message are the members of Electric's error rows
	v.String("error_code", "handler_failed").String("message", StorableError(f.Err)).String("wake", f.Wake.Kind()).String("key", f.Key).
		String("offset", f.Offset).Int("attempt", int64(f.Attempt)).Int("max_attempts", int64(f.MaxAttempts))
	v.Bool("will_retry", !f.GiveUp)
	if !f.GiveUp {
		v.Time("retry_at", f.RetryAt)
	}
	if giveUpRun {
		v.String("run_id", RunKey(f.Seq))
	}
	v.Time("timestamp", now)
	var events [][]byte
	if giveUpRun {
		events = append(events, RunEvent(RunKey(f.Seq), OpInsert, "started", "", now))
	}
	events = append(events, Event{Type: "error", Key: "error-" + strconv.FormatInt(f.Seq, 10) + "-" + strconv.Itoa(f.Attempt),
		Value: v.Bytes(), Operation: OpInsert, Timestamp: now}.Marshal())
	if _, ok := f.Wake.(InboxWake); ok && f.GiveUp {
		var u rawjson.Object
		u.String("status", "failed").Time("failed_at", now).String("error", StorableError(f.Err)).Int("attempts", int64(f.Attempt))
		events = append(events, Event{Type: InboxEventType, Key: f.Key, Value: u.Bytes(),
			Operation: OpUpdate, Timestamp: now}.Marshal())
	}
	if giveUpRun {
		events = append(events, RunEvent(RunKey(f.Seq), OpUpdate, "failed", "error", now))
	}
	return events
}

// maxErrorBytes bounds an error text stored in last_error, wake_failures and error
// events: handler errors and database messages may be long, hold NUL or invalid UTF-8
// (a handler that quotes its input), and must never themselves be refused.
const maxErrorBytes = 4096

// StorableError is err's text made storable everywhere (see textpolicy.Sanitize).
func StorableError(err error) string { return textpolicy.Sanitize(err.Error(), maxErrorBytes) }
