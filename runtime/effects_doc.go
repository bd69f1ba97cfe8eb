package runtime

import (
	"encoding/json"
	"time"
)

// effectsDoc is what one handler run wrote, as a handler running outside the server
// sends it with its done callback (entityd's "effects" extension of Electric's done).
// The server validates it and commits it in the done's transaction, together with the
// acknowledgement, exactly as it commits an in-process handler's writes: all of it or
// none of it, and none of it once the wake's epoch is stale.
type effectsDoc struct {
	// Stream is the entity's main stream, e.g. /assistant/a1/main.
	Stream        string            `json:"stream"`
	Events        []json.RawMessage `json:"events,omitempty"`
	Sends         []sendDoc         `json:"sends,omitempty"`
	SlashCommands []commandOp       `json:"slash_commands,omitempty"`
	Timers        []timerDoc        `json:"timers,omitempty"`
	Observations  []observationDoc  `json:"observations,omitempty"`
}

type sendDoc struct {
	To      string          `json:"to"`
	Type    string          `json:"type,omitempty"`
	Payload json.RawMessage `json:"payload"`
	Key     string          `json:"key,omitempty"`
	Mode    string          `json:"mode,omitempty"`
}

type timerDoc struct {
	ID      string          `json:"id"`
	DueAt   time.Time       `json:"due_at"`
	Payload json.RawMessage `json:"payload"`
}

type observationDoc struct {
	Source string   `json:"source"`
	Types  []string `json:"types,omitempty"`
	Remove bool     `json:"remove,omitempty"`
}

// document renders a run's buffered writes for the server.
func (e *effects) document(stream string) effectsDoc {
	d := effectsDoc{Stream: stream, SlashCommands: e.commandOps}
	for _, ev := range e.events {
		d.Events = append(d.Events, ev)
	}
	for _, s := range e.sends {
		d.Sends = append(d.Sends, sendDoc{To: s.url, Type: s.req.Type, Payload: s.req.Payload, Key: s.req.Key, Mode: s.req.Mode})
	}
	for _, t := range e.timers {
		d.Timers = append(d.Timers, timerDoc{ID: t.id, DueAt: t.due, Payload: t.payload})
	}
	for _, o := range e.observations {
		d.Observations = append(d.Observations, observationDoc{Source: o.source, Types: o.types, Remove: o.remove})
	}
	return d
}

// empty reports a run that wrote nothing.
func (d *effectsDoc) empty() bool {
	return len(d.Events) == 0 && len(d.Sends) == 0 && len(d.SlashCommands) == 0 && len(d.Timers) == 0 &&
		len(d.Observations) == 0
}
