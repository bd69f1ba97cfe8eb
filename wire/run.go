package wire

import (
	"strconv"
	"time"

	"github.com/entityd/entityd/internal/rawjson"
)

// RunKey is the key of the run (a `run` row, as Electric's runtime writes them) that a
// Go handler's reply to the unit of work at stream position seq belongs to: "run-<seq>".
// Electric's runtime numbers runs run-0, run-1, … from the highest key in the entity's
// state; keying by the wake's position instead needs no read of that state, and still
// never collides with an earlier run of the entity: units are delivered in stream order,
// and one is committed at most once (a failed attempt's writes are dropped). The
// reference's allocator takes the highest number plus one, so its own runs on the same
// stream stay clear of these too.
func RunKey(seq int64) string { return "run-" + strconv.FormatInt(seq, 10) }

// RunEvent is a `run` row event as Electric's runtime writes it: an insert with status
// "started", or an update to "completed" or "failed" with its finish_reason.
func RunEvent(key, op, status, finishReason string, at time.Time) []byte {
	var v rawjson.Object
	v.String("status", status)
	if finishReason != "" {
		v.String("finish_reason", finishReason)
	}
	return Event{Type: "run", Key: key, Value: v.Bytes(), Operation: op, Timestamp: at}.Marshal()
}
