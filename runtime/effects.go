package runtime

import (
	"encoding/json"
	"time"
)

// Effects are what one handler run wrote to one entity, as the server commits them in the
// transaction that acknowledges the wake: all of them or none, and none once the wake's
// epoch is stale. In the server they are applied as they are; a handler running in
// another process sends them with its done callback (entityd's "effects" extension of
// Electric's done), where the server checks them as it checks its own handlers' writes.
type Effects struct {
	// Stream is the entity's main stream, e.g. /assistant/a1/main.
	Stream        string            `json:"stream"`
	Events        []json.RawMessage `json:"events,omitempty"`
	Sends         []Send            `json:"sends,omitempty"`
	SlashCommands []CommandOp       `json:"slash_commands,omitempty"`
	Timers        []Timer           `json:"timers,omitempty"`
	Observations  []Observation     `json:"observations,omitempty"`
}

// Send is a message to another entity, delivered when the run commits (from_agent: the
// sending entity).
type Send struct {
	To      string          `json:"to"`
	Type    string          `json:"type,omitempty"`
	Payload json.RawMessage `json:"payload"`
	Key     string          `json:"key,omitempty"`
	Mode    string          `json:"mode,omitempty"`
}

// Timer wakes the entity with a ScheduleWake at DueAt.
type Timer struct {
	ID      string          `json:"id"`
	DueAt   time.Time       `json:"due_at"`
	Payload json.RawMessage `json:"payload"`
}

// Observation starts (or, with Remove, stops) observing the entity at Source.
type Observation struct {
	Source string   `json:"source"`
	Types  []string `json:"types,omitempty"`
	Remove bool     `json:"remove,omitempty"`
}

// Empty reports a run that wrote nothing.
func (e *Effects) Empty() bool {
	return len(e.Events) == 0 && !e.Extra()
}

// Extra reports writes besides events (sends, slash-command changes, timers, observations).
func (e *Effects) Extra() bool {
	return len(e.Sends) > 0 || len(e.SlashCommands) > 0 || len(e.Timers) > 0 || len(e.Observations) > 0
}

// own buffers an event the handler wrote.
func (e *Effects) own(event []byte) { e.Events = append(e.Events, event) }

// merge appends o's writes to e's.
func (e *Effects) merge(o *Effects) {
	e.Events = append(e.Events, o.Events...)
	e.Sends = append(e.Sends, o.Sends...)
	e.SlashCommands = append(e.SlashCommands, o.SlashCommands...)
	e.Timers = append(e.Timers, o.Timers...)
	e.Observations = append(e.Observations, o.Observations...)
}

// size estimates the bytes e takes in a done callback.
func (e *Effects) size() int {
	n := 0
	for _, ev := range e.Events {
		n += len(ev)
	}
	for _, s := range e.Sends {
		n += len(s.Payload) + 128
	}
	for _, op := range e.SlashCommands {
		n += 512 * (1 + len(op.Registrations))
	}
	for _, t := range e.Timers {
		n += len(t.Payload) + 128
	}
	return n + 128*len(e.Observations)
}
