package wire

import (
	"slices"

	"github.com/entityd/entityd/internal/rawjson"
)

// MarshalJSON renders the whole state as StreamDB's collections look to a reader:
// {"<event type>": {"<key>": row, ...}, ...}, types sorted, keys in the order they were
// first inserted. Rows are written as stored, never re-encoded.
func (s *State) MarshalJSON() ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	types := make([]string, 0, len(s.types))
	for typ := range s.types {
		types = append(types, typ)
	}
	slices.Sort(types)
	var out rawjson.Object
	for _, typ := range types {
		c := s.types[typ]
		var rows rawjson.Object
		for _, k := range c.order {
			rows.Raw(k, c.rows[k])
		}
		out.Raw(typ, rows.Bytes())
	}
	return out.Bytes(), nil
}
