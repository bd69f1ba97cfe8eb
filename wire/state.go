package wire

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/entityd/entityd/internal/rawjson"
)

// StreamEvent is a State Protocol change event as read from a stream.
type StreamEvent struct {
	Type    string          `json:"type"`
	Key     string          `json:"key"`
	Value   json.RawMessage `json:"value"`
	Headers struct {
		Operation string `json:"operation"`
		Txid      string `json:"txid"`
		Control   string `json:"control"`
	} `json:"headers"`
}

// State is an entity's materialized state: one collection per event type, rows by key.
// It applies events the way StreamDB does (an insert on an existing key and an update
// merge shallowly into the row, a delete removes it), so a handler sees what a UI sees.
type State struct {
	mu    sync.RWMutex
	types map[string]*collection
	seq   int64
}

type collection struct {
	rows  map[string]json.RawMessage
	order []string
}

// NewState returns an empty State.
func NewState() *State { return &State{types: map[string]*collection{}} }

// Seq is the sequence number of the last applied event.
func (s *State) Seq() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.seq
}

// Apply applies the event stored at seq. Malformed and control events only move Seq.
func (s *State) Apply(seq int64, data []byte) {
	var ev StreamEvent
	s.mu.Lock()
	defer s.mu.Unlock()
	if seq > s.seq {
		s.seq = seq
	}
	if json.Unmarshal(data, &ev) != nil || ev.Type == "" || ev.Headers.Operation == "" {
		return
	}
	c := s.types[ev.Type]
	if c == nil {
		c = &collection{rows: map[string]json.RawMessage{}}
		s.types[ev.Type] = c
	}
	switch ev.Headers.Operation {
	case "delete":
		if _, ok := c.rows[ev.Key]; ok {
			delete(c.rows, ev.Key)
			for i, k := range c.order {
				if k == ev.Key {
					c.order = append(c.order[:i:i], c.order[i+1:]...)
					break
				}
			}
		}
	default:
		old, exists := c.rows[ev.Key]
		if !exists {
			c.order = append(c.order, ev.Key)
			c.rows[ev.Key] = ev.Value
			return
		}
		c.rows[ev.Key] = mergeShallow(old, ev.Value)
	}
}

// Get returns the row of collection typ at key.
func (s *State) Get(typ, key string) (json.RawMessage, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c := s.types[typ]
	if c == nil {
		return nil, false
	}
	v, ok := c.rows[key]
	return v, ok
}

// Keys returns the keys of collection typ in the order they were first inserted.
func (s *State) Keys(typ string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c := s.types[typ]
	if c == nil {
		return nil
	}
	return append([]string(nil), c.order...)
}

// mergeShallow overlays the members of b on a (both JSON objects); if either is not an
// object, b replaces a.
func mergeShallow(a, b json.RawMessage) json.RawMessage {
	if !isObject(a) || !isObject(b) {
		return b
	}
	aKeys, am, errA := rawjson.Ordered(a)
	bKeys, bm, errB := rawjson.Ordered(b)
	if errA != nil || errB != nil {
		return b
	}
	var o rawjson.Object
	for _, k := range aKeys {
		if v, ok := bm[k]; ok {
			o.Raw(k, v)
		} else {
			o.Raw(k, am[k])
		}
	}
	for _, k := range bKeys {
		if _, ok := am[k]; !ok {
			o.Raw(k, bm[k])
		}
	}
	return o.Bytes()
}

func isObject(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && v[0] == '{'
}
