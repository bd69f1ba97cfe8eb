package external

import (
	"context"
	"errors"
	"time"

	"github.com/entityd/entityd/dssub"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wire"
)

// The poison-message rule for remote handlers: dssub gives up on an entity's work after
// the attempts in-process handlers get (--wake-max-attempts), so that a handler that
// keeps failing on it (an error status, no answer, no done — as when it calls a route
// this server lacks) never wedges the entity. What was set aside is recorded on the
// entity's stream as an "error" event, as a failed in-process run is, where the UI and
// the handler's next wake see it.

// GiveUpRule is dssub's give-up rule for entities' main streams, after attempts.
func GiveUpRule(attempts int) dssub.GiveUpRule {
	return dssub.GiveUpRule{Attempts: attempts, Applies: isEntityMain, SetAside: recordSetAside}
}

func isEntityMain(path string) bool {
	_, _, kind, ok := entitypath.Parse(path)
	return ok && kind == entitypath.KindMain
}

// recordSetAside appends the error event of work given up on to the entity's stream (an
// ended entity's closed stream takes none: nothing waits for its work any more).
func recordSetAside(ctx context.Context, tx *streamdb.Tx, w dssub.SetAside) error {
	now := time.Now()
	var v rawjson.Object
	v.String("message", "the handler failed "+w.Reason).String("wake", "remote").String("stream", w.Stream).
		String("from_offset", w.From).String("offset", w.To).Int("attempt", int64(w.Attempts)).
		Int("max_attempts", int64(w.Attempts)).Bool("will_retry", false).Time("timestamp", now)
	ev := wire.Event{Type: "error", Key: "error-remote-" + w.To, Value: v.Bytes(), Operation: wire.OpInsert,
		Timestamp: now}.Marshal()
	_, err := tx.Append(ctx, &streamdb.AppendRequest{Path: w.Stream, Messages: [][]byte{ev}})
	var closed *streamdb.ClosedError
	if errors.As(err, &closed) || errors.Is(err, streamdb.ErrNotFound) {
		return nil
	}
	return err
}
