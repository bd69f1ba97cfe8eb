package entity

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/entityd/entityd/internal/validation"
	"github.com/entityd/entityd/wire"
	"github.com/entityd/entityd/wire/editortool"
)

// BuiltinEventTypes are the events handlers write as part of the runtime's own
// vocabulary — Electric's runtime (runs, steps, text, tool calls, reasoning, errors,
// child status, context, manifests, replay watermarks) and the Go SDK (editor tool
// calls). A type's state_schemas need not list them: one that does has them validated;
// one that does not accepts them as they are. Electric's runtime always registers its
// types with schemas for all of them (DEFAULT_STATE_SCHEMAS), so with the reference a
// type registered by hand with a state_schemas of its own refuses its handler's runs.
var BuiltinEventTypes = map[string]bool{
	"run": true, "step": true, "text": true, "text_delta": true, "tool_call": true,
	"reasoning": true, "reasoning_delta": true, "error": true, "child_status": true,
	"context_inserted": true, "context_removed": true, "manifest": true, "replay_watermark": true,
	editortool.CallEventType: true,
}

// StateEventError is an event a handler wrote that the entity's state schemas refuse:
// an event type they do not declare (Details nil), or a value that does not match the
// type's schema.
type StateEventError struct {
	Index     int // the event's position in what was written
	EventType string
	Details   validation.Details
}

func (e *StateEventError) Error() string {
	typ := e.EventType
	if len(typ) > maxShownEventType { // what a client wrote is echoed, within bounds
		typ = strings.ToValidUTF8(typ[:maxShownEventType], "") + "…"
	}
	if e.Details == nil {
		return fmt.Sprintf("Unknown event type %q (event %d): the entity type's state_schemas do not declare it", typ, e.Index)
	}
	return fmt.Sprintf("Event %d (type %q) does not match its state schema", e.Index, typ)
}

// maxShownEventType bounds the event type an error message repeats.
const maxShownEventType = 128

// Unknown reports whether the event's type is not declared (UNKNOWN_EVENT_TYPE).
func (e *StateEventError) Unknown() bool { return e.Details == nil }

// DeclaresState reports whether e, under its current type t (nil when deleted), has
// state schemas: the effective ones are the type's overlaid on e's snapshot. Without
// them, what a handler writes is not checked against any (the hot path asks only this).
func DeclaresState(e *Entity, t *Type) bool {
	return e.StateSchemas != nil || (t != nil && t.StateSchemas != nil)
}

// stateEvent is what the state schema check and a fork read of a State Protocol event.
type stateEvent struct {
	Type     string          `json:"type"`
	Key      string          `json:"key"`
	Value    json.RawMessage `json:"value"`
	OldValue json.RawMessage `json:"old_value"`
	Headers  struct {
		Operation string `json:"operation"`
	} `json:"headers"`
}

// CheckStateEvents checks events a handler writes to e's main stream against e's
// effective state schemas (compiled once per type revision and per entity: see
// compiledSchemas). The server's own event types are not theirs to judge
// (CheckHandlerEvents decides what a handler may write of those); built-in event types
// are checked only when declared; any other type must be declared, and its value — the
// old_value of a delete that carries one — must match its schema. A delete with neither
// passes. Callers check CheckHandlerEvents first, so every event is a JSON object.
func (r *Registry) CheckStateEvents(e *Entity, t *Type, events [][]byte) error {
	if !DeclaresState(e, t) {
		return nil
	}
	for i, raw := range events {
		var ev stateEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return &HandlerWriteError{Index: i, Msg: "not a State Protocol event"}
		}
		if ServerEventTypes[ev.Type] {
			continue
		}
		schema, declared, err := r.StateSchema(e, t, ev.Type)
		if err != nil {
			return fmt.Errorf("entity: state schema %s: %w", ev.Type, err)
		}
		if !declared {
			return nil // a schema map that is not an object declares nothing
		}
		if schema == nil {
			if BuiltinEventTypes[ev.Type] {
				continue
			}
			return &StateEventError{Index: i, EventType: ev.Type}
		}
		payload := ev.Value
		if ev.Headers.Operation == wire.OpDelete && ev.OldValue != nil {
			payload = ev.OldValue
		}
		if payload == nil {
			continue
		}
		if d := schema.Validate(payload); d != nil {
			return &StateEventError{Index: i, EventType: ev.Type, Details: d}
		}
	}
	return nil
}

// AsStateEventError is errors.As for *StateEventError.
func AsStateEventError(err error) (*StateEventError, bool) {
	var se *StateEventError
	ok := errors.As(err, &se)
	return se, ok
}
