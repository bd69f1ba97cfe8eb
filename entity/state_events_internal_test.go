package entity

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/schemas"
)

const noteSchemas = `{"note":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}`

// TestCheckStateEvents: the rule of entity.CheckStateEvents, without a database.
func TestCheckStateEvents(t *testing.T) {
	r := &Registry{schemas: schemas.NewCache()}
	withSchemas := &Entity{URL: "/x/1", StateSchemas: json.RawMessage(noteSchemas)}
	plain := &Entity{URL: "/x/2"}
	ev := func(s string) [][]byte { return [][]byte{[]byte(s)} }

	require.NoError(t, r.CheckStateEvents(plain, nil, ev(`{"type":"anything","key":"k","value":1,"headers":{"operation":"insert"}}`)))
	require.NoError(t, r.CheckStateEvents(withSchemas, nil, ev(`{"type":"note","key":"k","value":{"text":"a"},"headers":{"operation":"insert"}}`)))
	require.NoError(t, r.CheckStateEvents(withSchemas, nil, ev(`{"type":"text_delta","key":"k","value":{},"headers":{"operation":"insert"}}`)), "built-in, undeclared")
	require.NoError(t, r.CheckStateEvents(withSchemas, nil, ev(`{"type":"inbox","key":"k","value":{"status":"processed"},"headers":{"operation":"update"}}`)), "server events are not judged here")
	require.NoError(t, r.CheckStateEvents(withSchemas, nil, ev(`{"type":"note","key":"k","headers":{"operation":"delete"}}`)))

	err := r.CheckStateEvents(withSchemas, nil, ev(`{"type":"other","key":"k","value":{},"headers":{"operation":"insert"}}`))
	se, ok := AsStateEventError(err)
	require.True(t, ok, "%v", err)
	require.True(t, se.Unknown())
	require.Equal(t, "other", se.EventType)

	err = r.CheckStateEvents(withSchemas, nil, [][]byte{
		[]byte(`{"type":"note","key":"a","value":{"text":"ok"},"headers":{"operation":"insert"}}`),
		[]byte(`{"type":"note","key":"b","old_value":{"text":1},"headers":{"operation":"delete"}}`),
	})
	se, ok = AsStateEventError(err)
	require.True(t, ok, "%v", err)
	require.False(t, se.Unknown())
	require.Equal(t, 1, se.Index)
	require.Equal(t, "/text", se.Details[0].Path)

	// the type's schemas overlay the entity's snapshot
	typ := &Type{Name: "x", StateSchemas: json.RawMessage(`{"note":{"type":"object","required":["title"]}}`)}
	err = r.CheckStateEvents(withSchemas, typ, ev(`{"type":"note","key":"k","value":{"text":"a"},"headers":{"operation":"insert"}}`))
	_, ok = AsStateEventError(err)
	require.True(t, ok, "the current type's schema is used: %v", err)
	require.True(t, DeclaresState(plain, typ))
	require.False(t, DeclaresState(plain, &Type{}))
}

// BenchmarkCheckStateEvents is the cost the state_schemas check adds to a direct write
// of one event: nothing but two nil checks for an entity without state schemas, one
// decode and one validation with a compiled (cached) schema for an entity with them.
func BenchmarkCheckStateEvents(b *testing.B) {
	r := &Registry{schemas: schemas.NewCache()}
	msgs := [][]byte{[]byte(`{"type":"note","key":"k1","value":{"text":"hello","n":1},"headers":{"operation":"insert"}}`)}
	for _, c := range []struct {
		name string
		e    *Entity
	}{{"plain", &Entity{URL: "/x/1"}}, {"schemas", &Entity{URL: "/x/2", StateSchemas: json.RawMessage(noteSchemas)}}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := r.CheckStateEvents(c.e, nil, msgs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
