package entity

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
)

// What a handler may write to its entity's main stream, with the entity's write token
// or in a done's effects. Handlers write their own events (runs, text, tool calls,
// state). The server's events are not theirs to make up: an inbox message or a signal
// would be work nobody sent, from a sender of the writer's choosing; an entity_created,
// entity_stopped or wake record would fake a spawn, a stop or a timer; tags and
// slash-command rows have their own APIs. Two updates of server events are a handler's
// to write, as Electric's runtime does: marking an inbox message processed (or failed
// after its last attempt), and marking a signal handled. Both may only add the
// handler's own fields to an event that exists, never change what the server wrote.

// ServerEventTypes are the event types only the server writes.
var ServerEventTypes = map[string]bool{
	"inbox": true, "signal": true, "entity_created": true, "entity_stopped": true, "wake": true,
	"tags": true, "slash_command": true,
}

// handlerFields are the members a handler may set when it updates a server event of
// that type; every other member it sends must equal the event's current value.
var handlerFields = map[string]map[string]bool{
	"inbox":  {"status": true, "processed_at": true, "failed_at": true, "error": true, "attempts": true},
	"signal": {"status": true, "handled_at": true, "handled_by": true, "outcome": true, "previous_state": true, "new_state": true},
}

// handlerStatuses are the statuses a handler may give a server event.
var handlerStatuses = map[string]map[string]bool{
	"inbox":  {"processed": true, "failed": true},
	"signal": {"handled": true},
}

// HandlerWriteError is an event a handler may not write.
type HandlerWriteError struct {
	Index int // the event's position in what was written
	Msg   string
}

func (e *HandlerWriteError) Error() string { return fmt.Sprintf("event %d: %s", e.Index, e.Msg) }

// Originals finds the newest value of the server event of type typ and key key on the
// entity's main stream (ok false when there is none).
type Originals func(typ, key string) (value json.RawMessage, ok bool, err error)

type handlerEvent struct {
	Type    *string         `json:"type"`
	Key     *string         `json:"key"`
	Value   json.RawMessage `json:"value"`
	Headers struct {
		Operation string          `json:"operation"`
		Control   string          `json:"control"`
		From      json.RawMessage `json:"from"`
	} `json:"headers"`
}

// CheckHandlerEvents checks the events a handler writes to the main stream of the
// entity at url. originals is asked only for updates of server events.
func CheckHandlerEvents(url string, events [][]byte, originals Originals) error {
	for i, raw := range events {
		if err := checkHandlerEvent(url, raw, originals); err != nil {
			var hw *HandlerWriteError
			if errors.As(err, &hw) {
				hw.Index = i
				return hw
			}
			return err
		}
	}
	return nil
}

func checkHandlerEvent(url string, raw []byte, originals Originals) error {
	bad := func(format string, args ...any) error { return &HandlerWriteError{Msg: fmt.Sprintf(format, args...)} }
	var ev handlerEvent
	if err := json.Unmarshal(raw, &ev); err != nil || !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		return bad("not a State Protocol event (a JSON object with type, key and headers.operation)")
	}
	if ev.Type == nil || *ev.Type == "" || ev.Key == nil {
		return bad("an event needs a type and a key")
	}
	if ev.Headers.Control != "" {
		return bad("control events (snapshot-start, snapshot-end, reset) are written by the server only")
	}
	switch ev.Headers.Operation {
	case "insert", "update", "upsert", "delete":
	default:
		return bad("headers.operation must be insert, update, upsert or delete")
	}
	if len(ev.Headers.From) > 0 && string(ev.Headers.From) != "null" {
		var from string
		if json.Unmarshal(ev.Headers.From, &from) != nil || from != url {
			return bad("headers.from must be the entity itself (%s): a handler writes as its entity", url)
		}
	}
	typ := *ev.Type
	if !ServerEventTypes[typ] {
		return nil
	}
	fields, updatable := handlerFields[typ]
	if !updatable || ev.Headers.Operation != "update" {
		return bad("%q events are written by the server only", typ)
	}
	var value map[string]json.RawMessage
	if json.Unmarshal(ev.Value, &value) != nil {
		return bad("an update of a %q event needs an object value", typ)
	}
	if status, ok := value["status"]; ok {
		var s string
		if json.Unmarshal(status, &s) != nil || !handlerStatuses[typ][s] {
			return bad("a handler may set the status of a %q event only to one of %v", typ, keys(handlerStatuses[typ]))
		}
	}
	if by, ok := value["handled_by"]; ok {
		var s string
		if json.Unmarshal(by, &s) != nil || s != url {
			return bad("handled_by must be the entity itself (%s)", url)
		}
	}
	orig, found, err := originals(typ, *ev.Key)
	if err != nil {
		return err
	}
	if !found {
		return bad("there is no %q event with key %q to update", typ, *ev.Key)
	}
	var current map[string]json.RawMessage
	_ = json.Unmarshal(orig, &current)
	for k, v := range value {
		if fields[k] {
			continue
		}
		// Electric's runtime repeats a signal's value when it marks it handled: what it
		// repeats must be what the server wrote.
		was, ok := current[k]
		if typ != "signal" || !ok || !sameJSON(was, v) {
			return bad("an update of a %q event may only set %v; %q is the server's", typ, keys(fields), k)
		}
	}
	return nil
}

// sameJSON reports whether a and b are the same JSON value (whatever their spacing and
// escapes: a handler re-encodes what it read).
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&x) != nil || db.Decode(&y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
