package wire

import (
	"encoding/json"
	"time"

	"github.com/entityd/entityd/wire/composer"
)

// Wake says why a handler runs. It is one of InboxWake, SpawnWake, ScheduleWake,
// ObservationWake, SignalWake or RegisteredWake; a type switch tells them apart.
type Wake interface {
	isWake()
	// Kind names the variant: inbox, spawn, schedule, observation, signal or registered.
	Kind() string
}

// InboxWake delivers one inbox message.
type InboxWake struct {
	// Key is the message's key (the send's idempotency key, or a generated one).
	Key string
	// Type is the message type (composer_input, a type from inbox_schemas, or "").
	Type string
	// Payload is the message payload exactly as sent.
	Payload json.RawMessage
	// From is the sender's principal URL; FromAgent is set when another entity sent it.
	From      string
	FromAgent string
	// Mode is immediate, queued, steer, or paused (for a paused message that was released).
	Mode      string
	Position  string
	Timestamp time.Time
	// Offset is the stream offset right after the message.
	Offset string
	// Value is the inbox row as stored (with any updates merged), for fields not above.
	Value json.RawMessage
}

func (InboxWake) isWake()      {}
func (InboxWake) Kind() string { return "inbox" }

// ComposerInput returns the parsed composer_input when this is one (ok is false for other
// message types, or for a payload that was edited into another shape after it was sent).
func (w InboxWake) ComposerInput() (*composer.Input, bool) {
	if w.Type != composer.InputType {
		return nil, false
	}
	ci, err := composer.Parse(w.Payload)
	if err != nil {
		return nil, false
	}
	return ci, true
}

// SpawnWake is the first wake of a new entity.
type SpawnWake struct {
	Args   json.RawMessage // the spawn args ({} when none were given)
	Parent string
}

func (SpawnWake) isWake()      {}
func (SpawnWake) Kind() string { return "spawn" }

// ScheduleWake is a timer the entity set with ctx.Schedule firing.
type ScheduleWake struct {
	ID      string
	Payload json.RawMessage
	DueAt   time.Time
}

func (ScheduleWake) isWake()      {}
func (ScheduleWake) Kind() string { return "schedule" }

// ObservationWake reports a change in an entity this entity observes (ctx.Observe):
// an event its handler wrote, or its end (Lifecycle "stopped" or "killed").
type ObservationWake struct {
	Source    string
	Event     *ObservedEvent // nil for lifecycle changes
	Lifecycle string
}

// ObservedEvent is the observed entity's event.
type ObservedEvent struct {
	Type      string          `json:"type"`
	Key       string          `json:"key"`
	Operation string          `json:"operation"`
	Value     json.RawMessage `json:"value,omitempty"`
}

func (ObservationWake) isWake()      {}
func (ObservationWake) Kind() string { return "observation" }

// SignalWake delivers a signal sent to the entity (SIGINT, SIGHUP, SIGUSR, SIGTERM,
// SIGSTOP, SIGCONT; SIGKILL ends the entity without a wake). After the SIGTERM wake the
// entity stops.
type SignalWake struct {
	Signal  string
	Reason  string
	Payload json.RawMessage
}

func (SignalWake) isWake()      {}
func (SignalWake) Kind() string { return "signal" }
