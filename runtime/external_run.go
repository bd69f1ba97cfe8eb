package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"time"

	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/internal/textpolicy"
	"github.com/entityd/entityd/wire"
)

// streamRun is one stream of a wake, handled and waiting to be committed. Its entity
// stays locked (one run of an entity at a time in this process) until release.
type streamRun struct {
	path, readTo string
	url          string // the entity's
	eff          *Effects
	ent          *externalEntity
}

func (s *streamRun) ack() map[string]string {
	return map[string]string{"path": s.path, "offset": s.readTo}
}

// release unlocks the entity; committed=false forgets its cached state, which holds the
// runs' own writes.
func (s *streamRun) release(committed bool) {
	if !committed {
		s.ent.reset()
	}
	s.ent.mu.Unlock()
}

// commitBudgetBytes bounds what one callback carries for one entity (with
// ExternalOptions.CommitEvery events): past it, what was handled so far is committed with
// the acknowledgement of the chunk read so far, and the wake goes on (the server refuses
// bodies over 4 MiB and more than 10,000 events per entity).
const commitBudgetBytes = 1 << 20

// runStream handles the new events of one stream of a wake: the entity's handler runs
// once per unit of work (as in the server), and what the runs wrote waits in the result
// to be committed with the acknowledgement of what was read. A large backlog is
// committed in parts, at chunk boundaries, as it goes.
func (r *External) runStream(ctx context.Context, w *externalWake, path, acked string) (*streamRun, error) {
	typ, url, kind, ok := entitypath.Parse(path)
	def := r.defs[typ]
	if !ok || kind != entitypath.KindMain || def == nil {
		return nil, fmt.Errorf("runtime: no entity definition here for the stream %s", path)
	}
	ackedSeq, err := offsetSeq(acked)
	if err != nil {
		return nil, err
	}
	ent := r.states.get(path)
	ent.mu.Lock()
	run := &streamRun{path: path, url: url, eff: &Effects{Stream: path}, ent: ent}
	partly := false // a part of the backlog was committed
	handle := func(items []wire.ScannedWake, readTo string) error {
		for _, it := range items {
			run.eff.merge(r.runItem(ctx, def, url, typ, ent, it))
		}
		run.readTo = readTo
		if run.eff.size() < commitBudgetBytes && len(run.eff.Events) < r.opts.CommitEvery {
			return nil
		}
		if err := r.commit(ctx, w, run); err != nil {
			return err
		}
		partly = true
		r.committed(run)
		run.eff = &Effects{Stream: path}
		return nil
	}
	err = ent.catchUp(ctx, r, ackedSeq, handle)
	if err != nil && !partly {
		// The entity may have been re-created since it was cached: read it whole once
		// (what the runs so far wrote was not committed, and is dropped).
		ent.reset()
		run.eff, run.readTo = &Effects{Stream: path}, ""
		err = ent.catchUp(ctx, r, ackedSeq, handle)
	}
	if err != nil {
		ent.reset()
		ent.mu.Unlock()
		return nil, err
	}
	return run, nil
}

// runItem runs the handler on one unit of work until it succeeds or is given up on,
// and returns what is to be committed for it: the successful run's writes, or the
// failure events (as the server writes them for its own handlers).
func (r *External) runItem(ctx context.Context, def *EntityDefinition, url, typ string, ent *externalEntity, it wire.ScannedWake) *Effects {
	failures := &Effects{Stream: entitypath.Main(url)}
	for attempt := 1; ; attempt++ {
		inv := Invocation{EntityURL: url, EntityType: typ, Wake: it.Wake, Seq: it.Seq, Attempt: attempt,
			State: func() (*wire.State, error) { return ent.state, nil }}
		eff, err := r.invoke(ctx, def, inv)
		if err == nil {
			for _, ev := range eff.Events { // later units of this wake see this one's writes
				ent.state.Apply(ent.state.Seq(), ev)
			}
			failures.merge(eff)
			return failures
		}
		giveUp := attempt >= r.opts.MaxAttempts || ctx.Err() != nil
		retryAt := time.Now().Add(r.backoff(attempt))
		r.log.Warn("handler failed", zap.String("entity", url), zap.String("wake", it.Wake.Kind()),
			zap.String("key", it.Key), zap.Int("attempt", attempt), zap.Bool("giving_up", giveUp), zap.Error(err))
		failures.Events = append(failures.Events, asRaw(wire.FailureEvents(wire.RunFailure{Wake: it.Wake, Key: it.Key,
			Seq: it.Seq, Err: err, Attempt: attempt, MaxAttempts: r.opts.MaxAttempts, RetryAt: retryAt, GiveUp: giveUp}))...)
		if giveUp {
			return failures
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(retryAt)):
		}
	}
}

// invoke runs the handler, turning a panic into an error.
func (r *External) invoke(ctx context.Context, def *EntityDefinition, inv Invocation) (eff *Effects, err error) {
	defer func() {
		if v := recover(); v != nil {
			r.log.Error("handler panicked", zap.String("entity", inv.EntityURL), zap.Any("panic", v),
				zap.ByteString("stack", debug.Stack()))
			err = fmt.Errorf("handler panicked: %v", v)
		}
	}()
	return Invoke(ctx, r, r.log, def, inv)
}

// asRaw types events as the JSON documents they are.
func asRaw(events [][]byte) []json.RawMessage {
	out := make([]json.RawMessage, len(events))
	for i, ev := range events {
		out[i] = ev
	}
	return out
}

// commit acknowledges one stream of a wake up to what was read, with its writes. When the server refuses
// the writes (a send to an entity that stopped, a state event its schema refuses), it
// commits the refusal as an error event instead, and when even that is refused (the
// entity itself ended), the bare acknowledgement: retrying would be refused again.
func (r *External) commit(ctx context.Context, w *externalWake, run *streamRun) error {
	path, readTo := run.path, run.readTo
	body := map[string]any{"epoch": w.Epoch, "acks": []map[string]string{run.ack()}}
	if !run.eff.Empty() {
		body["effects"] = []*Effects{run.eff}
	}
	_, err := r.call(ctx, http.MethodPost, w.Callback, w.ClaimToken, body, nil)
	if !refused(err) || run.eff.Empty() {
		return err
	}
	r.log.Error("the server refused a wake's writes; they are dropped", zap.String("stream", path), zap.Error(err))
	var v rawjson.Object
	v.String("message", textpolicy.Sanitize(err.Error(), 4096)).String("wake", "commit").String("offset", readTo).
		Bool("will_retry", false).Time("timestamp", time.Now())
	ev := wire.Event{Type: "error", Key: "error-commit-" + readTo, Value: v.Bytes(), Operation: wire.OpInsert,
		Timestamp: time.Now()}.Marshal()
	body["effects"] = []Effects{{Stream: path, Events: []json.RawMessage{ev}}}
	_, err = r.call(ctx, http.MethodPost, w.Callback, w.ClaimToken, body, nil)
	if !refused(err) {
		return err
	}
	delete(body, "effects")
	_, err = r.call(ctx, http.MethodPost, w.Callback, w.ClaimToken, body, nil)
	return err
}

// refused reports an answer that says the writes themselves are not acceptable.
func refused(err error) bool {
	var api *APIError
	return errors.As(err, &api) && (api.Status == http.StatusUnprocessableEntity || api.Code == "NOT_RUNNING" ||
		api.Status == http.StatusRequestEntityTooLarge)
}
