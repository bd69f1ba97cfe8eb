package wake

import (
	"encoding/json"
	"time"

	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/streamdb"
)

// item is one unit of work found in an entity's stream.
type item struct {
	seq    int64
	offset streamdb.Offset
	wake   Wake
	key    string // names the work in error events and failure records
	// held are the changes to the held (paused) messages that the events up to and
	// including this one made; they are persisted with this item's acknowledgement.
	held []heldOp
}

// heldOp inserts (or replaces) or deletes a held message.
type heldOp struct {
	del   bool
	key   string
	seq   int64
	value json.RawMessage
}

type heldMsg struct {
	seq   int64
	value json.RawMessage
}

// scanner turns stream events into work items. It remembers the paused messages held
// back until an update releases them, and steer messages already handed to a running
// handler.
type scanner struct {
	held     map[string]heldMsg
	consumed map[int64]bool
}

func newScanner(held map[string]heldMsg, consumed []int64) *scanner {
	sc := &scanner{held: held, consumed: map[int64]bool{}}
	if sc.held == nil {
		sc.held = map[string]heldMsg{}
	}
	for _, s := range consumed {
		sc.consumed[s] = true
	}
	return sc
}

// scan classifies msgs, which follow the last scanned event. It returns the work items in
// stream order, and the held changes made after the last item (to persist when the scan
// position moves past them without work).
func (sc *scanner) scan(msgs []streamdb.Message) (items []*item, trailing []heldOp) {
	events := make([]*Event, len(msgs))
	for i, m := range msgs {
		var ev Event
		if json.Unmarshal(m.Data, &ev) == nil {
			events[i] = &ev
		}
	}
	// A queued message cancelled or deleted later in the same window is not delivered.
	withdrawn := map[string]bool{}
	for _, ev := range events {
		if ev == nil || ev.Type != inbox.EventType {
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
	var ops []heldOp
	for i, ev := range events {
		m := msgs[i]
		if ev == nil || ev.Headers.Control != "" {
			continue
		}
		var w Wake
		key := ev.Key
		switch ev.Type {
		case inbox.EventType:
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
		if w == nil || ev.Headers.Operation != "insert" && ev.Type != inbox.EventType {
			continue
		}
		items = append(items, &item{seq: m.End.Seq, offset: m.End, wake: w, key: key, held: ops})
		ops = nil
	}
	return items, ops
}

// inbox handles an inbox event: a message to deliver now, a paused message to hold, or an
// update that releases, changes or cancels a held message.
func (sc *scanner) inbox(ev *Event, m streamdb.Message, withdrawn map[string]bool, ops *[]heldOp) Wake {
	switch ev.Headers.Operation {
	case "insert", "upsert":
		if sc.consumed[m.End.Seq] || withdrawn[ev.Key] {
			return nil
		}
		if modeOf(ev.Value) == inbox.ModePaused {
			sc.held[ev.Key] = heldMsg{seq: m.End.Seq, value: ev.Value}
			*ops = append(*ops, heldOp{key: ev.Key, seq: m.End.Seq, value: ev.Value})
			return nil
		}
		return inboxWake(ev.Key, ev.Value, m.End)
	case "update":
		h, ok := sc.held[ev.Key]
		if !ok {
			return nil // an update of a delivered message (status changes and the like)
		}
		merged := mergeShallow(h.value, ev.Value)
		if statusOf(merged) == "cancelled" {
			delete(sc.held, ev.Key)
			*ops = append(*ops, heldOp{del: true, key: ev.Key})
			return nil
		}
		if modeOf(merged) == inbox.ModePaused {
			sc.held[ev.Key] = heldMsg{seq: h.seq, value: merged}
			*ops = append(*ops, heldOp{key: ev.Key, seq: h.seq, value: merged})
			return nil
		}
		delete(sc.held, ev.Key)
		*ops = append(*ops, heldOp{del: true, key: ev.Key})
		return inboxWake(ev.Key, merged, m.End)
	case "delete":
		if _, ok := sc.held[ev.Key]; ok {
			delete(sc.held, ev.Key)
			*ops = append(*ops, heldOp{del: true, key: ev.Key})
		}
	}
	return nil
}

func inboxWake(key string, value json.RawMessage, end streamdb.Offset) InboxWake {
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
		Mode: v.Mode, Position: v.Position, Timestamp: v.Timestamp, Offset: end.String(), Value: value}
}

func wakeEvent(ev *Event) Wake {
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
