package streamdb

import (
	"errors"
	"regexp"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOffsetString(t *testing.T) {
	for _, tc := range []struct {
		o    Offset
		want string
	}{
		{Start, "0000000000000000_0000000000000000"},
		{off(1, 5), "0000000000000001_0000000000000005"},
		{off(3, 42), "0000000000000003_0000000000000042"},
		{off(9999999999999999, 9999999999999999), "9999999999999999_9999999999999999"},
	} {
		require.Equal(t, tc.want, tc.o.String())
		got, kind, err := ParseOffset(tc.want)
		require.NoError(t, err)
		require.Equal(t, OffsetConcrete, kind)
		require.Equal(t, tc.o, got)
	}
}

func TestOffsetStringSortsInStreamOrder(t *testing.T) {
	offsets := []Offset{off(10, 3), off(2, 100), off(1, 1), off(100, 7), off(11, 2), Start}
	strs := make([]string, len(offsets))
	for i, o := range offsets {
		strs[i] = o.String()
	}
	sort.Strings(strs)
	sort.Slice(offsets, func(i, j int) bool { return offsets[i].Less(offsets[j]) })
	for i, o := range offsets {
		require.Equal(t, o.String(), strs[i])
	}
	require.True(t, off(1, 9).Less(off(2, 0)))
	require.False(t, off(2, 0).Less(off(2, 0)))
	require.False(t, off(3, 0).Less(off(2, 9)))
}

func TestParseOffset(t *testing.T) {
	ok := []struct {
		in   string
		want Offset
		kind OffsetKind
	}{
		{"-1", Start, OffsetBeginning},
		{"now", Offset{}, OffsetNow},
		{"0000000000000000_0000000000000000", Start, OffsetConcrete},
		{"0000000000000007_0000000000000123", off(7, 123), OffsetConcrete},
		{"0_0", Start, OffsetConcrete},
		{"1_5", off(1, 5), OffsetConcrete},
		{"12_0034", off(12, 34), OffsetConcrete},
		{"9223372036854775807_9223372036854775807", off(1<<63-1, 1<<63-1), OffsetConcrete},
	}
	for _, tc := range ok {
		t.Run("ok "+tc.in, func(t *testing.T) {
			got, kind, err := ParseOffset(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.kind, kind)
			require.Equal(t, tc.want, got)
		})
	}

	bad := []string{
		"",                                    // empty (offset=)
		"1,2",                                 // comma
		"0000000000000001_0000000000000002,3", // comma after a valid offset
		"1 _2", " 1_2", "1_2 ", "1_ 2",        // spaces
		"1\t_2",   // tab
		"1/2",     // slash
		"1_2/",    // trailing slash
		"../1_2",  // dot-dot
		"1_2/..",  // dot-dot after
		"1.2",     // dot
		"1_2\x00", // NUL
		"\x001_2", // leading NUL
		"1_2\r\n", // CRLF
		"1_2\n",   // LF
		"1_2\r",   // CR
		"1_",      // no position
		"_1",      // no sequence
		"_",       // nothing at all
		"1",       // no separator
		"12",      // no separator
		"1__2",    // two separators
		"1_2_3",   // three parts
		"abc",     // letters
		"1_2a",    // trailing letter
		"a1_2",    // leading letter
		"0x1_2",   // hex
		"1e3_2",   // exponent
		"NOW",     // sentinels are case-sensitive
		"Now",     //
		"-1_0",    // minus on a concrete offset
		"-2",      // other negative numbers
		"-0",      //
		"+1_2",    // plus
		"1_-2",    //
		"1&2",     // query separators
		"1=2", "1?2", "1#2", "1%2C2",
		"１_２",                                        // full-width digits
		"99999999999999999999_1",                     // sequence overflows int64
		"1_99999999999999999999",                     // position overflows int64
		"9223372036854775808_0",                      // MaxInt64+1
		"0000000000000000000000000000000000000001_1", // over the length limit (42 bytes)
	}
	for _, in := range bad {
		t.Run("bad "+in, func(t *testing.T) {
			got, kind, err := ParseOffset(in)
			require.ErrorIs(t, err, ErrBadOffset, "%q must be refused", in)
			require.Equal(t, Offset{}, got)
			require.Equal(t, OffsetKind(0), kind)
		})
	}
}

var canonicalOffset = regexp.MustCompile(`^[0-9]{16}_[0-9]{16}$`)

// FuzzParseOffset checks that ParseOffset never panics, refuses with ErrBadOffset only,
// accepts nothing but the sentinels and digits_digits, and that an accepted offset in
// the canonical 16-digit form is rendered back byte for byte by String. The committed
// corpus is in testdata/fuzz/FuzzParseOffset.
func FuzzParseOffset(f *testing.F) {
	for _, s := range []string{
		"-1", "now", "0_0", "1_5", "0000000000000003_0000000000000042",
		"1,2", "1 _2", "1/2", "../1_2", "1_2\x00", "1_2\r\n", "", "1_", "_1", "abc",
		"99999999999999999999_1", "9999999999999999_9999999999999999",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, kind, err := ParseOffset(s)
		if err != nil {
			if !errors.Is(err, ErrBadOffset) {
				t.Fatalf("ParseOffset(%q): unexpected error %v", s, err)
			}
			if o != (Offset{}) || kind != 0 {
				t.Fatalf("ParseOffset(%q) refused but returned %v, %v", s, o, kind)
			}
			return
		}
		switch kind {
		case OffsetBeginning:
			if s != "-1" || o != Start {
				t.Fatalf("ParseOffset(%q) = beginning %v", s, o)
			}
			return
		case OffsetNow:
			if s != "now" {
				t.Fatalf("ParseOffset(%q) = now", s)
			}
			return
		case OffsetConcrete:
		default:
			t.Fatalf("ParseOffset(%q): unknown kind %v", s, kind)
		}
		if !regexp.MustCompile(`^[0-9]+_[0-9]+$`).MatchString(s) {
			t.Fatalf("ParseOffset accepted %q, which is not digits_digits", s)
		}
		if o.Seq < 0 || o.Pos < 0 {
			t.Fatalf("ParseOffset(%q) = negative %v", s, o)
		}
		// Every accepted offset survives a round trip through its canonical form.
		back, kind2, err := ParseOffset(o.String())
		if err != nil || kind2 != OffsetConcrete || back != o {
			t.Fatalf("ParseOffset(%q) = %v, but its String %q parses as %v, %v, %v", s, o, o.String(), back, kind2, err)
		}
		if canonicalOffset.MatchString(s) && o.String() != s {
			t.Fatalf("canonical offset %q renders as %q", s, o.String())
		}
	})
}
