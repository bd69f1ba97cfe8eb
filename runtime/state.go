package runtime

import (
	"encoding/json"

	"github.com/entityd/entityd/wire"
)

// State is a read-only view of the entity's materialized state.
type State struct{ s *wire.State }

// Get returns the row key of collection eventType (e.g. "inbox", "text", "slash_command",
// "context_inserted", or a custom event type).
func (s *State) Get(eventType, key string) (json.RawMessage, bool) { return s.s.Get(eventType, key) }

// Keys returns the keys of collection eventType in insertion order.
func (s *State) Keys(eventType string) []string { return s.s.Keys(eventType) }

// Decode decodes the row key of collection eventType into v.
func (s *State) Decode(eventType, key string, v any) (bool, error) {
	raw, ok := s.s.Get(eventType, key)
	if !ok {
		return false, nil
	}
	return true, json.Unmarshal(raw, v)
}
