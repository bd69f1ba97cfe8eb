package wire

import (
	"encoding/json"
	"time"
)

// Message is one event of a stream at its position (Seq counts from 1).
type Message struct {
	Seq  int64
	Data []byte
}

// ScannedWake is one unit of work found in an entity's stream.
type ScannedWake struct {
	Seq  int64 // the event's position in the stream
	Key  string
	Wake Wake
	// Held are the changes to the held (paused) messages that the events up to and
	// including this one made; the server persists them with this wake's acknowledgement.
	Held []HeldOp
}

// HeldOp inserts (or replaces) or deletes a held message.
type HeldOp struct {
	Del   bool
	Key   string
	Seq   int64
	Value json.RawMessage
}

// HeldMessage is a paused message held back until an update releases it.
type HeldMessage struct {
	Seq   int64
	Value json.RawMessage
}

// Scanner turns an entity's stream events into the wakes its handler gets, with the same
// rules wherever the handler runs: paused messages are held until released, queued
// messages withdrawn before delivery are skipped, and steer messages already handed to a
// running handler are not delivered again.
type Scanner struct {
	held     map[string]HeldMessage
	consumed map[int64]bool
}

// NewScanner starts from the held messages and consumed steer messages persisted so far
// (both nil at the beginning of a stream).
func NewScanner(held map[string]HeldMessage, consumed []int64) *Scanner {
	sc := &Scanner{held: held, consumed: map[int64]bool{}}
	if sc.held == nil {
		sc.held = map[string]HeldMessage{}
	}
	for _, s := range consumed {
		sc.consumed[s] = true
	}
	return sc
}

// Scan classifies msgs, which follow the events scanned before. It returns the wakes in
// stream order, and the held changes made after the last of them (to persist when the
// scan position moves past them without work). An InboxWake's Offset is left for the
// caller, who knows the byte positions.
func (sc *Scanner) Scan(msgs []Message) (items []ScannedWake, trailing []HeldOp) {
	events := make([]*StreamEvent, len(msgs))
	for i, m := range msgs {
		var ev StreamEvent
		if json.Unmarshal(m.Data, &ev) == nil {
			events[i] = &ev
		}
	}
	// A queued message cancelled or deleted later in the same window is not delivered.
	withdrawn := map[string]bool{}
	for _, ev := range events {
		if ev == nil || ev.Type != InboxEventType {
			continue
		}
		switch ev.Headers.Operation {
		case "delete":
			withdrawn[ev.Key] = true
		case "update":
			if statusOf(ev.Value) == "cancelled" {
				withdrawn[ev.Key] = true
			}
		}
	}
	var ops []HeldOp
	for i, ev := range events {
		m := msgs[i]
		if ev == nil || ev.Headers.Control != "" {
			continue
		}
		var w Wake
		key := ev.Key
		switch ev.Type {
		case InboxEventType:
			w = sc.inbox(ev, m, withdrawn, &ops)
		case "entity_created":
			var v struct {
				Args      json.RawMessage `json:"args"`
				ParentURL string          `json:"parent_url"`
			}
			_ = json.Unmarshal(ev.Value, &v)
			if v.Args == nil {
				v.Args = json.RawMessage("{}")
			}
			w = SpawnWake{Args: v.Args, Parent: v.ParentURL}
		case "signal":
			var v struct {
				Signal  string          `json:"signal"`
				Reason  string          `json:"reason"`
				Payload json.RawMessage `json:"payload"`
			}
			_ = json.Unmarshal(ev.Value, &v)
			if v.Signal != "" && v.Signal != "SIGKILL" {
				w = SignalWake{Signal: v.Signal, Reason: v.Reason, Payload: v.Payload}
			}
		case "wake":
			w = wakeEvent(ev)
		}
		if w == nil || ev.Headers.Operation != "insert" && ev.Type != InboxEventType {
			continue
		}
		items = append(items, ScannedWake{Seq: m.Seq, Wake: w, Key: key, Held: ops})
		ops = nil
	}
	return items, ops
}

// Held is the held messages as of the last scan, by key.
func (sc *Scanner) Held() map[string]HeldMessage { return sc.held }

// inbox handles an inbox event: a message to deliver now, a paused message to hold, or an
// update that releases, changes or cancels a held message.
func (sc *Scanner) inbox(ev *StreamEvent, m Message, withdrawn map[string]bool, ops *[]HeldOp) Wake {
	switch ev.Headers.Operation {
	case "insert", "upsert":
		if sc.consumed[m.Seq] || withdrawn[ev.Key] {
			return nil
		}
		if modeOf(ev.Value) == ModePaused {
			sc.held[ev.Key] = HeldMessage{Seq: m.Seq, Value: ev.Value}
			*ops = append(*ops, HeldOp{Key: ev.Key, Seq: m.Seq, Value: ev.Value})
			return nil
		}
		return InboxWakeOf(ev.Key, ev.Value)
	case "update":
		h, ok := sc.held[ev.Key]
		if !ok {
			return nil // an update of a delivered message (status changes and the like)
		}
		merged := mergeShallow(h.Value, ev.Value)
		if statusOf(merged) == "cancelled" {
			delete(sc.held, ev.Key)
			*ops = append(*ops, HeldOp{Del: true, Key: ev.Key})
			return nil
		}
		if modeOf(merged) == ModePaused {
			sc.held[ev.Key] = HeldMessage{Seq: h.Seq, Value: merged}
			*ops = append(*ops, HeldOp{Key: ev.Key, Seq: h.Seq, Value: merged})
			return nil
		}
		delete(sc.held, ev.Key)
		*ops = append(*ops, HeldOp{Del: true, Key: ev.Key})
		return InboxWakeOf(ev.Key, merged)
	case "delete":
		if _, ok := sc.held[ev.Key]; ok {
			delete(sc.held, ev.Key)
			*ops = append(*ops, HeldOp{Del: true, Key: ev.Key})
		}
	}
	return nil
}

// InboxWakeOf is the wake of the inbox row value (with any updates merged) at key.
func InboxWakeOf(key string, value json.RawMessage) InboxWake {
	var v struct {
		From        string          `json:"from"`
		FromAgent   string          `json:"from_agent"`
		Payload     json.RawMessage `json:"payload"`
		Mode        string          `json:"mode"`
		Position    string          `json:"position"`
		MessageType string          `json:"message_type"`
		Timestamp   time.Time       `json:"timestamp"`
	}
	_ = json.Unmarshal(value, &v)
	return InboxWake{Key: key, Type: v.MessageType, Payload: v.Payload, From: v.From, FromAgent: v.FromAgent,
		Mode: v.Mode, Position: v.Position, Timestamp: v.Timestamp, Value: value}
}

func wakeEvent(ev *StreamEvent) Wake {
	var v struct {
		Kind      string          `json:"kind"`
		ID        string          `json:"id"`
		Payload   json.RawMessage `json:"payload"`
		DueAt     time.Time       `json:"due_at"`
		Source    string          `json:"source"`
		Event     *ObservedEvent  `json:"event"`
		Lifecycle string          `json:"lifecycle"`
	}
	if json.Unmarshal(ev.Value, &v) != nil {
		return nil
	}
	switch v.Kind {
	case "schedule":
		return ScheduleWake{ID: v.ID, Payload: v.Payload, DueAt: v.DueAt}
	case "observation":
		return ObservationWake{Source: v.Source, Event: v.Event, Lifecycle: v.Lifecycle}
	case "":
		return registeredWake(ev)
	}
	return nil
}

func modeOf(v json.RawMessage) string {
	var x struct {
		Mode string `json:"mode"`
	}
	_ = json.Unmarshal(v, &x)
	return x.Mode
}

func statusOf(v json.RawMessage) string {
	var x struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(v, &x)
	return x.Status
}

// Consume records that the steer message at seq was handed to a running handler, so a
// later scan does not deliver it again.
func (sc *Scanner) Consume(seq int64) { sc.consumed[seq] = true }

// Consumed reports whether the message at seq was handed to a running handler.
func (sc *Scanner) Consumed(seq int64) bool { return sc.consumed[seq] }
