package hosted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/runtime"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wire"
)

// Limits of one done's effects (the callback body is bounded too).
const (
	maxRemoteRuns    = 1000  // entities in one done
	maxRemoteEvents  = 10000 // per entity
	maxRemoteOthers  = 100   // sends, slash-command changes, timers, observations per entity
	maxTimerIDLength = 128
)

// EffectsError is a done callback's effects that the server refuses; nothing of the done
// is committed.
type EffectsError struct{ Msg string }

func (e *EffectsError) Error() string { return e.Msg }

// Checked are the checked writes of the handler runs a done callback reports (one
// runtime.Effects per entity), ready to be committed in the done's transaction.
type Checked struct {
	runs []checkedRun
}

type checkedRun struct {
	stream string // the entity's main stream
	events [][]byte
	eff    *runEffects // its writes besides events
}

// Decode reads a done callback's "effects" (one runtime.Effects per entity) and
// checks them as the in-process Context checks a handler's writes: event shapes and the
// entity type's state schemas, sends with the HTTP send path's rules, timers and
// observed entities. Slash-command changes are checked when they are replayed against
// the stored layers at commit.
func (r *Runner) Decode(ctx context.Context, raw json.RawMessage) (*Checked, error) {
	var docs []runtime.Effects
	if err := json.Unmarshal(raw, &docs); err != nil {
		return nil, &EffectsError{"effects must be an array of {stream, events, sends, slash_commands, timers, observations}: " + err.Error()}
	}
	if len(docs) > maxRemoteRuns {
		return nil, &EffectsError{fmt.Sprintf("effects name more than %d entities", maxRemoteRuns)}
	}
	out := &Checked{}
	seen := map[string]bool{}
	for i := range docs {
		run, err := r.checkRun(ctx, &docs[i])
		if err != nil {
			return nil, err
		}
		if seen[run.stream] {
			return nil, &EffectsError{"effects name the stream " + run.stream + " twice"}
		}
		seen[run.stream] = true
		out.runs = append(out.runs, run)
	}
	return out, nil
}

func (r *Runner) checkRun(ctx context.Context, d *runtime.Effects) (checkedRun, error) {
	bad := func(format string, args ...any) (checkedRun, error) {
		return checkedRun{}, &EffectsError{d.Stream + ": " + fmt.Sprintf(format, args...)}
	}
	url, ok := entitypath.OfMain(d.Stream)
	if !ok {
		return bad("effects belong to an entity's main stream (/<type>/<id>/main)")
	}
	e, err := r.registry.Known(ctx, url) // its type never changes; its status is checked at commit
	if errors.Is(err, entity.ErrNotFound) {
		return bad("no such entity")
	} else if err != nil {
		return checkedRun{}, err
	}
	if len(d.Events) > maxRemoteEvents {
		return bad("more than %d events", maxRemoteEvents)
	}
	if len(d.Sends) > maxRemoteOthers || len(d.SlashCommands) > maxRemoteOthers || len(d.Timers) > maxRemoteOthers ||
		len(d.Observations) > maxRemoteOthers {
		return bad("more than %d sends, slash-command changes, timers or observations", maxRemoteOthers)
	}
	run := checkedRun{stream: d.Stream, eff: &runEffects{r: r, url: url, eff: &runtime.Effects{Stream: d.Stream, SlashCommands: d.SlashCommands}}}
	t, err := r.registry.Type(ctx, e.Type)
	if err != nil && !errors.Is(err, entity.ErrTypeNotFound) {
		return checkedRun{}, err
	}
	for i, raw := range d.Events {
		if err := r.checkEvent(ctx, raw, e, t); err != nil {
			return bad("events[%d]: %v", i, err)
		}
		run.events = append(run.events, raw)
	}
	for i, s := range d.Sends {
		if s.Mode != "" && !wire.ValidMode(s.Mode) {
			return bad("sends[%d]: unknown mode %q", i, s.Mode)
		}
		if len(s.Payload) == 0 {
			s.Payload = json.RawMessage("null")
		}
		if err := r.CheckSend(ctx, url, &s); err != nil {
			return bad("sends[%d]: %v", i, err)
		}
		run.eff.eff.Sends = append(run.eff.eff.Sends, s)
	}
	for i, op := range d.SlashCommands {
		switch op.Op {
		case "register", "unregister", "replace_owned":
		default:
			return bad("slash_commands[%d]: unknown operation %q", i, op.Op)
		}
	}
	for i, t := range d.Timers {
		if t.ID == "" || len(t.ID) > maxTimerIDLength || t.DueAt.IsZero() {
			return bad("timers[%d]: a timer needs an id (at most %d bytes) and a due_at", i, maxTimerIDLength)
		}
		payload := t.Payload
		if len(payload) == 0 {
			payload = json.RawMessage("null")
		}
		run.eff.eff.Timers = append(run.eff.eff.Timers, runtime.Timer{ID: t.ID, DueAt: t.DueAt, Payload: payload})
	}
	for i, o := range d.Observations {
		if !o.Remove {
			if err := r.CheckEntity(ctx, o.Source); err != nil {
				return bad("observations[%d]: %s: %v", i, o.Source, err)
			}
		}
		run.eff.eff.Observations = append(run.eff.eff.Observations, o)
	}
	return run, nil
}

func (r *Runner) checkEvent(ctx context.Context, raw json.RawMessage, e *entity.Entity, t *entity.Type) error {
	var ev wire.StreamEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return errors.New("not a State Protocol event")
	}
	if ev.Type == "" || ev.Key == "" {
		return errors.New("an event needs a type and a key")
	}
	// the rule every handler write follows, through a write token or here
	if err := entity.CheckHandlerEvents(e.URL, [][]byte{raw}, r.originals(ctx, e)); err != nil {
		var hw *entity.HandlerWriteError
		if errors.As(err, &hw) {
			return errors.New(hw.Msg)
		}
		return err
	}
	// Context helpers (WriteText, StartRun, FailRun, InsertContext, RemoveContext,
	// CallEditorTool) and a given-up run's failure events write built-in event types,
	// which a type's state schemas need not declare (the rule of direct writes too).
	if entity.ServerEventTypes[ev.Type] || entity.BuiltinEventTypes[ev.Type] || ev.Headers.Operation == wire.OpDelete {
		return nil
	}
	compiled, declared, err := r.registry.StateSchema(e, t, ev.Type)
	if err != nil {
		return fmt.Errorf("state schema %s: %w", ev.Type, err)
	}
	if !declared {
		return nil
	}
	if compiled == nil {
		return &runtime.StateValidationError{EventType: ev.Type}
	}
	if d := compiled.Validate(ev.Value); d != nil {
		return &runtime.StateValidationError{EventType: ev.Type, Details: d}
	}
	return nil
}

// Streams are the entity streams the effects write to.
func (e *Checked) Streams() []string {
	out := make([]string, len(e.runs))
	for i, r := range e.runs {
		out[i] = r.stream
	}
	return out
}

// Apply writes every run's events and other effects in tx, and returns the end offsets
// of the events appended to each stream.
func (e *Checked) Apply(ctx context.Context, tx *streamdb.Tx) (map[string][]streamdb.Offset, error) {
	appended := map[string][]streamdb.Offset{}
	for _, run := range e.runs {
		if len(run.events) > 0 {
			res, err := tx.Append(ctx, &streamdb.AppendRequest{Path: run.stream, ContentType: "application/json",
				Messages: run.events})
			var closed *streamdb.ClosedError
			if errors.As(err, &closed) {
				return nil, fmt.Errorf("runtime: %s: %w", run.stream, entity.ErrNotRunning)
			} else if err != nil {
				return nil, fmt.Errorf("runtime: %s: %w", run.stream, err)
			}
			appended[run.stream] = res.Offsets
		}
		if err := run.eff.Apply(ctx, tx); err != nil {
			return nil, err
		}
	}
	return appended, nil
}

// Committed runs after the done's transaction commits.
func (e *Checked) Committed() {
	for _, run := range e.runs {
		run.eff.Committed()
	}
}

// originals finds the newest version of a server event on e's main stream (for the
// updates of them a handler may write).
func (r *Runner) originals(ctx context.Context, e *entity.Entity) entity.Originals {
	return func(typ, key string) (json.RawMessage, bool, error) {
		data, ok, err := r.streams.LastEvent(ctx, e.StreamID, typ, key)
		if err != nil || !ok {
			return nil, ok, err
		}
		var ev struct {
			Value json.RawMessage `json:"value"`
		}
		_ = json.Unmarshal(data, &ev)
		return ev.Value, true, nil
	}
}
