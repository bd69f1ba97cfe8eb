package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/wire"
)

// Context is what a handler gets for one wake. It is a context.Context (cancelled when
// the run times out) with the wake, the entity, and helpers whose writes are committed
// together with the wake's acknowledgement when the handler returns nil.
type Context struct {
	context.Context
	// Wake says why the handler runs: one of InboxWake, SpawnWake, ScheduleWake,
	// ObservationWake, SignalWake, RegisteredWake.
	Wake Wake
	// Entity is the entity being woken.
	Entity Entity
	// Attempt counts runs of this wake, from 1 (more after failures).
	Attempt int
	// Log is a logger with the entity and wake attached.
	Log *zap.Logger
	// SlashCommands manages the entity's slash commands; reads see this run's own writes.
	SlashCommands *SlashCommands

	host     Host
	seq      int64 // the wake's position in the stream (names its run)
	run      *replyRun
	def      *EntityDefinition
	state    func() (*wire.State, error)
	steer    <-chan InboxWake
	eff      *Effects
	commands *SlashCommands
}

// Entity identifies the woken entity.
type Entity struct {
	URL  string
	Type string
}

// newContext is a handler's Context for one wake, wherever the handler runs (h says where).
func newContext(ctx context.Context, h Host, log *zap.Logger, def *EntityDefinition, inv Invocation, eff *Effects) *Context {
	c := &Context{Context: ctx, Wake: inv.Wake, Entity: Entity{URL: inv.EntityURL, Type: inv.EntityType},
		Attempt: inv.Attempt, host: h, seq: inv.Seq, def: def, state: inv.State, steer: inv.Steer, eff: eff,
		Log: log.With(zap.String("entity", inv.EntityURL), zap.String("wake", inv.Wake.Kind()))}
	c.commands = &SlashCommands{c: c}
	c.SlashCommands = c.commands
	return c
}

// State is the entity's materialized state: every collection of its stream (inbox,
// text, slash_command, context_inserted, custom state, …) as StreamDB would materialize
// it, as of the start of this run (earlier runs' writes included; this run's own writes
// are committed when it returns).
func (c *Context) State() *State {
	st, err := c.state()
	if err != nil {
		// A handler must not act on a state it could not read: the run fails (the
		// runtime turns the panic into an error) and is retried.
		panic(fmt.Errorf("runtime: read the entity's state: %w", err))
	}
	return &State{s: st}
}

// Steering delivers steer-mode messages sent while this handler runs; a message received
// here is not delivered again as a wake of its own.
func (c *Context) Steering() <-chan InboxWake { return c.steer }

// WriteEvent appends a custom state event: an insert (or, with op "update"/"delete", a
// change) of row key in the collection eventType. When the entity type declares state
// schemas, eventType must be one of them and value must validate.
func (c *Context) WriteEvent(eventType, key, op string, value any) error {
	if eventType == "" || key == "" {
		return errors.New("runtime: WriteEvent needs an event type and a key")
	}
	if op == "" {
		op = wire.OpInsert
	}
	switch op {
	case wire.OpInsert, wire.OpUpdate, wire.OpUpsert, wire.OpDelete:
	default:
		return fmt.Errorf("runtime: unknown operation %q", op)
	}
	var raw []byte
	if op != wire.OpDelete {
		var err error
		if raw, err = toJSON(value); err != nil {
			return err
		}
		if err := c.validateState(eventType, raw); err != nil {
			return err
		}
	}
	c.eff.own(wire.Event{Type: eventType, Key: key, Value: raw, Operation: op, Timestamp: time.Now()}.Marshal())
	return nil
}

// StateValidationError is a custom event refused by the type's state schemas.
type StateValidationError struct {
	EventType string
	Details   any
}

func (e *StateValidationError) Error() string {
	if e.Details == nil {
		return "runtime: unknown event type " + e.EventType + " (not in the entity type's state schemas)"
	}
	return fmt.Sprintf("runtime: event %s does not match its state schema: %v", e.EventType, e.Details)
}

func (c *Context) validateState(eventType string, value []byte) error {
	if c.def.StateSchemas == nil {
		return nil
	}
	raw, ok := c.def.StateSchemas[eventType]
	if !ok {
		return &StateValidationError{EventType: eventType}
	}
	schema, err := c.host.Schemas().Get(raw)
	if err != nil {
		return fmt.Errorf("runtime: state schema %s: %w", eventType, err)
	}
	if d := schema.Validate(value); d != nil {
		return &StateValidationError{EventType: eventType, Details: d}
	}
	return nil
}

// ContextEntry is an item of context an entity keeps for itself (instructions, files,
// skills), with where it came from.
type ContextEntry struct {
	// ID is the entry's key; inserting an existing ID replaces the entry.
	ID      string
	Name    string
	Content string
	// Attrs are free-form attributes (type, skill, …).
	Attrs map[string]any
	// Provenance records where the entry came from (source, command, raw input, …).
	Provenance map[string]any
}

// InsertContext appends a context_inserted event.
func (c *Context) InsertContext(e ContextEntry) error {
	if e.ID == "" {
		return errors.New("runtime: a context entry needs an ID")
	}
	now := time.Now()
	var v rawjson.Object
	v.String("id", e.ID).String("name", e.Name).String("content", e.Content)
	v.Value("attrs", orEmpty(e.Attrs)).Value("provenance", orEmpty(e.Provenance)).Time("inserted_at", now)
	c.eff.own(wire.Event{Type: "context_inserted", Key: e.ID, Value: v.Bytes(), Operation: wire.OpInsert,
		Timestamp: now}.Marshal())
	return nil
}

// RemoveContext appends a context_removed event for the entry id.
func (c *Context) RemoveContext(id string, provenance map[string]any) error {
	now := time.Now()
	var v rawjson.Object
	v.String("id", id).Value("provenance", orEmpty(provenance)).Time("removed_at", now)
	c.eff.own(wire.Event{Type: "context_removed", Key: id, Value: v.Bytes(), Operation: wire.OpInsert,
		Timestamp: now}.Marshal())
	return nil
}

// HasContext reports whether the entry id is in context (inserted and not removed since),
// counting this run's own InsertContext and RemoveContext calls.
func (c *Context) HasContext(id string) bool {
	for i := len(c.eff.Events) - 1; i >= 0; i-- {
		var ev wire.StreamEvent
		if json.Unmarshal(c.eff.Events[i], &ev) != nil || ev.Key != id {
			continue
		}
		switch ev.Type {
		case "context_inserted":
			return true
		case "context_removed":
			return false
		}
	}
	s := c.State()
	ins, ok := s.Get("context_inserted", id)
	if !ok {
		return false
	}
	rem, removed := s.Get("context_removed", id)
	if !removed {
		return true
	}
	var a, b struct {
		InsertedAt time.Time `json:"inserted_at"`
		RemovedAt  time.Time `json:"removed_at"`
	}
	_ = json.Unmarshal(ins, &a)
	_ = json.Unmarshal(rem, &b)
	return a.InsertedAt.After(b.RemovedAt)
}

// Message is a message a handler sends to another entity.
type Message struct {
	Type    string
	Payload any
	// Key makes the send idempotent (as with the HTTP API's key).
	Key  string
	Mode string
}

// Send sends a message to the entity at url (its inbox receives it when this run's
// acknowledgement commits, with from_agent set to this entity). The message is validated
// now, with the same rules as the HTTP send path.
func (c *Context) Send(url string, msg Message) error {
	payload, err := toJSON(msg.Payload)
	if err != nil {
		return err
	}
	send := Send{To: url, Type: msg.Type, Payload: payload, Key: msg.Key, Mode: msg.Mode}
	if err := c.host.CheckSend(c, c.Entity.URL, &send); err != nil {
		return err
	}
	c.eff.Sends = append(c.eff.Sends, send)
	return nil
}

// Schedule sets a timer: at time at (or now, if at is in the past) the entity is woken
// with a ScheduleWake carrying payload. It returns the timer's id.
func (c *Context) Schedule(at time.Time, payload any) (string, error) {
	raw, err := toJSON(payload)
	if err != nil {
		return "", err
	}
	id := uuid.NewString()
	c.eff.Timers = append(c.eff.Timers, Timer{ID: id, DueAt: at, Payload: raw})
	return id, nil
}

// Observe wakes this entity with an ObservationWake whenever the entity at url writes an
// event of one of eventTypes (any type when none are given) from its handler, and when it
// stops or is killed.
func (c *Context) Observe(url string, eventTypes ...string) error {
	if err := c.host.CheckEntity(c, url); err != nil {
		return fmt.Errorf("runtime: observe %s: %w", url, err)
	}
	c.eff.Observations = append(c.eff.Observations, Observation{Source: url, Types: eventTypes})
	return nil
}

// Unobserve stops observing the entity at url.
func (c *Context) Unobserve(url string) {
	c.eff.Observations = append(c.eff.Observations, Observation{Source: url, Remove: true})
}

func toJSON(v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return []byte("null"), nil
	case json.RawMessage:
		if !json.Valid(x) {
			return nil, errors.New("runtime: invalid JSON")
		}
		return x, nil
	case []byte:
		if !json.Valid(x) {
			return nil, errors.New("runtime: invalid JSON")
		}
		return x, nil
	}
	return json.Marshal(v)
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
