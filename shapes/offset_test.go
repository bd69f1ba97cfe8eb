package shapes

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// An offset keeps, from its position on, exactly what its snapshot saw, and reads back
// as it was written; once the position is past every transaction the snapshot saw, it
// is a plain log position.
func TestOffsetKeepsWhatTheSnapshotSaw(t *testing.T) {
	s, ok := parseSnap("10:20:10,13,17")
	require.True(t, ok)
	require.Equal(t, "10:20:10,13,17", s.String())
	for _, at := range []uint64{0, 9, 10, 11, 13, 14, 17, 18, 19, 20, 25} {
		o := offset{pos: position{txid: at, id: 3}, seen: s.from(at)}
		for txid := at; txid < 30; txid++ {
			require.Equal(t, s.sees(txid), o.seen.sees(txid), "from %d: %d", at, txid)
		}
		back, ok := parseOffset(o.String())
		require.True(t, ok, o.String())
		require.Equal(t, o.String(), back.String())
		for txid := at; txid < 30; txid++ {
			require.Equal(t, s.sees(txid), back.seen.sees(txid), "%s: %d", o, txid)
		}
	}
	require.Equal(t, "14_3_20:17", offset{pos: position{14, 3}, seen: s.from(14)}.String())
	require.Equal(t, "18_3_20", offset{pos: position{18, 3}, seen: s.from(18)}.String())
	require.Equal(t, "20_3", offset{pos: position{20, 3}, seen: s.from(20)}.String())
}

// Offsets and snapshot cursors come from clients: parsing any string must not panic, and
// what parses reads back the same from its own String.
func FuzzParseOffset(f *testing.F) {
	for _, s := range []string{"0_0", "14_3_20:17", "18_3_20", "20_3", "s10:20:10,13,17_YQ", "s5_YQ",
		"1_2_3:", "1_2_1", "9_9_20:30", "s10:20:_YQ", "-1", "now", "_", "1__2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if o, ok := parseOffset(s); ok {
			back, ok := parseOffset(o.String())
			if !ok || back.String() != o.String() {
				t.Fatalf("%q: %q does not read back (%q, %v)", s, o.String(), back.String(), ok)
			}
		}
		if c, ok, _ := parseSnapshotCursor(s); ok {
			back, ok, _ := parseSnapshotCursor(c.String())
			if !ok || back.String() != c.String() {
				t.Fatalf("%q: cursor %q does not read back", s, c.String())
			}
		}
	})
}
