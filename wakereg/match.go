package wakereg

import (
	"encoding/json"
	"slices"
)

// sourceEvent is a State Protocol event read from a source stream.
type sourceEvent struct {
	Type    string          `json:"type"`
	Key     *string         `json:"key"`
	Value   json.RawMessage `json:"value"`
	Headers struct {
		Operation string `json:"operation"`
	} `json:"headers"`
}

// change is one entry of a wake's changes (Electric's WakeMessage.changes).
type change struct {
	Collection    string          `json:"collection"`
	Kind          string          `json:"kind"`
	Key           string          `json:"key"`
	Value         json.RawMessage `json:"value,omitempty"`
	OldValue      json.RawMessage `json:"oldValue,omitempty"`
	From          string          `json:"from,omitempty"`
	FromPrincipal string          `json:"from_principal,omitempty"`
	FromAgent     string          `json:"from_agent,omitempty"`
	Payload       json.RawMessage `json:"payload,omitempty"`
	Timestamp     string          `json:"timestamp,omitempty"`
	MessageType   string          `json:"message_type,omitempty"`
}

// match decides whether ev satisfies c: the change it makes, and for runFinished the
// run's status (completed or failed).
func match(c Condition, ev *sourceEvent) (ch *change, runStatus string) {
	key := ""
	if ev.Key != nil {
		key = *ev.Key
	}
	if c.RunFinished {
		if ev.Type != "run" || ev.Headers.Operation != "update" {
			return nil, ""
		}
		var v struct {
			Status string `json:"status"`
		}
		_ = json.Unmarshal(ev.Value, &v)
		if v.Status != "completed" && v.Status != "failed" {
			return nil, ""
		}
		if key == "" {
			key = "run"
		}
		return &change{Collection: "runs", Kind: "update", Key: key}, v.Status
	}
	if ev.Type == "" {
		return nil, ""
	}
	if len(c.Collections) > 0 && !slices.Contains(c.Collections, ev.Type) {
		return nil, ""
	}
	kind := "insert" // insert, upsert and anything else count as inserts
	switch ev.Headers.Operation {
	case "update", "delete":
		kind = ev.Headers.Operation
	}
	if len(c.Ops) > 0 && !slices.Contains(c.Ops, kind) {
		return nil, ""
	}
	ch = &change{Collection: ev.Type, Kind: kind, Key: key}
	var v map[string]json.RawMessage
	if json.Unmarshal(ev.Value, &v) != nil {
		return ch, ""
	}
	// the row's own value and old value, as the reference reads them
	ch.Value = v["value"]
	if old, ok := v["oldValue"]; ok {
		ch.OldValue = old
	} else {
		ch.OldValue = v["old_value"]
	}
	if ev.Type == "inbox" {
		str := func(name string) string {
			var s string
			_ = json.Unmarshal(v[name], &s)
			return s
		}
		ch.From, ch.FromPrincipal, ch.FromAgent = str("from"), str("from_principal"), str("from_agent")
		ch.Payload, ch.Timestamp, ch.MessageType = v["payload"], str("timestamp"), str("message_type")
	}
	return ch, ""
}
