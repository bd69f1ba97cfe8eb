package entity

import (
	"encoding/json"
	"maps"
	"slices"
	"sync"

	"github.com/entityd/entityd/internal/schemas"
)

// compiledSchemas memoizes compiled message schemas on a Type or Entity value. Types and
// entities are immutable once loaded (a re-registration loads a new value), so this is
// exactly "compiled once per (type, revision, message type)".
type compiledSchemas struct {
	once sync.Once
	m    map[string]json.RawMessage
	err  error
	c    sync.Map // message type -> *schemas.Schema
}

func (cs *compiledSchemas) schemaFor(cache *schemas.Cache, all json.RawMessage, key string) (*schemas.Schema, bool, error) {
	if all == nil {
		return nil, false, nil
	}
	cs.once.Do(func() {
		cs.m = map[string]json.RawMessage{}
		cs.err = json.Unmarshal(all, &cs.m)
	})
	if cs.err != nil {
		return nil, true, cs.err
	}
	raw, ok := cs.m[key]
	if !ok {
		return nil, true, nil
	}
	if v, ok := cs.c.Load(key); ok {
		return v.(*schemas.Schema), true, nil
	}
	s, err := cache.Get(raw)
	if err != nil {
		return nil, true, err
	}
	cs.c.Store(key, s)
	return s, true, nil
}

// InboxSchema returns the compiled schema that validates messages of msgType sent to e:
// the current type's schema when it declares one, else the schema e was spawned with
// (so amendments reach existing entities and a deleted type keeps its entities working).
// declared is false when neither declares inbox schemas, which means "accept anything";
// a nil schema with declared true means the message type is unknown.
func (r *Registry) InboxSchema(e *Entity, t *Type, msgType string) (s *schemas.Schema, declared bool, err error) {
	if t != nil {
		s, declared, err = t.inbox.schemaFor(r.schemas, t.InboxSchemas, msgType)
		if s != nil || err != nil {
			return s, declared, err
		}
	}
	s2, declared2, err := e.inbox.schemaFor(r.schemas, e.InboxSchemas, msgType)
	return s2, declared || declared2, err
}

// StateSchema is InboxSchema for the state events a handler writes (state_schemas):
// declared is false when neither the type nor e declares state schemas.
func (r *Registry) StateSchema(e *Entity, t *Type, eventType string) (s *schemas.Schema, declared bool, err error) {
	if t != nil {
		s, declared, err = t.state.schemaFor(r.schemas, t.StateSchemas, eventType)
		if s != nil || err != nil {
			return s, declared, err
		}
	}
	s2, declared2, err := e.state.schemaFor(r.schemas, e.StateSchemas, eventType)
	return s2, declared || declared2, err
}

// Precompile compiles every schema of t so that no send or spawn pays for compilation;
// it returns the first compilation error, which registration reports as a 400.
func (r *Registry) Precompile(t *Type) error {
	if t.CreationSchema != nil {
		if _, err := r.schemas.Get(t.CreationSchema); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name string
		all  json.RawMessage
	}{{"inbox_schemas", t.InboxSchemas}, {"state_schemas", t.StateSchemas}} {
		if f.all == nil {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(f.all, &m); err != nil {
			return err
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if _, err := r.schemas.Get(m[k]); err != nil {
				return &SchemaCompileError{Field: f.name, Key: k, Err: err}
			}
		}
	}
	return nil
}

// SchemaCompileError names the schema that failed to compile.
type SchemaCompileError struct {
	Field string // inbox_schemas or state_schemas
	Key   string
	Err   error
}

func (e *SchemaCompileError) Error() string { return "schema " + e.Key + ": " + e.Err.Error() }
func (e *SchemaCompileError) Unwrap() error { return e.Err }
