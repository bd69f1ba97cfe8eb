package wire

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func get(t *testing.T, s *State, typ, key string) string {
	t.Helper()
	v, ok := s.Get(typ, key)
	require.True(t, ok, "no %s/%s", typ, key)
	return string(v)
}

// TestStateAppliesEventsLikeStreamDB: inserts add rows in order, updates (and inserts of
// an existing key) merge shallowly keeping the member order, deletes remove rows.
func TestStateAppliesEventsLikeStreamDB(t *testing.T) {
	s := NewState()
	s.Apply(1, []byte(ev("inbox", "m1", "insert", `{"from":"/a","payload":{"x":1,"y":2},"mode":"queued","status":"pending"}`)))
	s.Apply(2, []byte(ev("inbox", "m2", "insert", `{"payload":2}`)))
	s.Apply(3, []byte(ev("text", "t1", "insert", `{"text":"hi"}`)))
	require.Equal(t, []string{"m1", "m2"}, s.Keys("inbox"))
	require.Equal(t, []string{"t1"}, s.Keys("text"))
	require.Equal(t, int64(3), s.Seq())

	// update: shallow merge; existing members keep their place, new ones go last, nested
	// objects are replaced whole
	s.Apply(4, []byte(ev("inbox", "m1", "update", `{"status":"cancelled","payload":{"z":3},"reason":"r"}`)))
	require.Equal(t, `{"from":"/a","payload":{"z":3},"mode":"queued","status":"cancelled","reason":"r"}`, get(t, s, "inbox", "m1"))
	require.Equal(t, []string{"m1", "m2"}, s.Keys("inbox"), "an update does not move the row")

	// an insert of an existing key merges the same way; upsert likewise
	s.Apply(5, []byte(ev("inbox", "m2", "insert", `{"mode":"immediate"}`)))
	require.Equal(t, `{"payload":2,"mode":"immediate"}`, get(t, s, "inbox", "m2"))
	s.Apply(6, []byte(ev("inbox", "m2", "upsert", `{"payload":3}`)))
	require.Equal(t, `{"payload":3,"mode":"immediate"}`, get(t, s, "inbox", "m2"))
	s.Apply(7, []byte(ev("custom", "c", "upsert", `{"n":1}`)))
	require.Equal(t, `{"n":1}`, get(t, s, "custom", "c"))

	// an update of a missing key inserts it
	s.Apply(8, []byte(ev("inbox", "m3", "update", `{"payload":4}`)))
	require.Equal(t, []string{"m1", "m2", "m3"}, s.Keys("inbox"))

	// delete removes, and a later insert of the key starts a fresh row at the end
	s.Apply(9, []byte(ev("inbox", "m1", "delete", "")))
	_, ok := s.Get("inbox", "m1")
	require.False(t, ok)
	require.Equal(t, []string{"m2", "m3"}, s.Keys("inbox"))
	s.Apply(10, []byte(ev("inbox", "m1", "insert", `{"payload":"again"}`)))
	require.Equal(t, `{"payload":"again"}`, get(t, s, "inbox", "m1"), "nothing of the deleted row is left")
	require.Equal(t, []string{"m2", "m3", "m1"}, s.Keys("inbox"))
	s.Apply(11, []byte(ev("inbox", "nope", "delete", "")))
	require.Equal(t, []string{"m2", "m3", "m1"}, s.Keys("inbox"), "deleting a missing key changes nothing")

	// values that are not objects replace the row
	s.Apply(12, []byte(ev("counter", "n", "insert", `1`)))
	s.Apply(13, []byte(ev("counter", "n", "update", `2`)))
	require.Equal(t, `2`, get(t, s, "counter", "n"))
	s.Apply(14, []byte(ev("counter", "n", "update", `{"v":3}`)))
	require.Equal(t, `{"v":3}`, get(t, s, "counter", "n"))

	// the rows are the values' bytes (numbers, strings, member order as written)
	s.Apply(15, []byte(ev("raw", "r", "insert", `{"b":1.50,"a":"\u00e9"}`)))
	require.Equal(t, `{"b":1.50,"a":"\u00e9"}`, get(t, s, "raw", "r"))
	s.Apply(16, []byte(ev("raw", "r", "update", `{"c":true}`)))
	require.Equal(t, `{"b":1.50,"a":"\u00e9","c":true}`, get(t, s, "raw", "r"))
}

func TestStateIgnoresControlAndMalformedEvents(t *testing.T) {
	s := NewState()
	s.Apply(1, []byte(ev("text", "t", "insert", `{"text":"a"}`)))
	s.Apply(2, []byte(`{"headers":{"control":"snapshot-end"}}`))
	s.Apply(3, []byte(`not json`))
	s.Apply(4, []byte(`{"type":"text","key":"u","value":{}}`)) // no operation
	require.Equal(t, int64(4), s.Seq(), "every event moves Seq")
	require.Equal(t, []string{"t"}, s.Keys("text"))
	require.Nil(t, s.Keys("nothing"))
	_, ok := s.Get("nothing", "x")
	require.False(t, ok)

	// the worker applies a run's own writes with seq 0: Seq does not go back
	s.Apply(0, []byte(ev("text", "v", "insert", `{"text":"own"}`)))
	require.Equal(t, int64(4), s.Seq())
	require.Equal(t, []string{"t", "v"}, s.Keys("text"))

	// Keys returns a copy
	keys := s.Keys("text")
	keys[0] = "changed"
	require.Equal(t, []string{"t", "v"}, s.Keys("text"))
}
