package entity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// decodeOrdered decodes a JSON object into m and records its keys in document order.
func decodeOrdered(data []byte, m map[string]json.RawMessage, order *[]string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("expected a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		if _, dup := m[k]; !dup {
			*order = append(*order, k)
		}
		m[k] = v
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
