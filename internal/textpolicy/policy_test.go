package textpolicy

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/validation"
)

func TestCheck(t *testing.T) {
	cases := []struct {
		in         string
		name, text string
	}{
		{"plain", "", ""},
		{"ünïcødé ✓ 🙂", "", ""},
		{"a\x00b", ProblemNUL, ProblemNUL},
		{"tab\there", ProblemControl, ""},
		{"line\nbreak\r\n", ProblemControl, ""},
		{"bell\x07", ProblemControl, ProblemControl},
		{"del\x7f", ProblemControl, ProblemControl},
		{"c1\u0085", ProblemControl, ProblemControl},
		{"bad\xffutf8", ProblemUTF8, ProblemUTF8},
		{"truncated\xe2\x82", ProblemUTF8, ProblemUTF8},
		{"surrogate\xed\xa0\x80", ProblemUTF8, ProblemUTF8}, // CESU-style encoded surrogate
		{"", "", ""},
	}
	for _, c := range cases {
		require.Equal(t, c.name, Check(c.in, Name), "Name %q", c.in)
		require.Equal(t, c.text, Check(c.in, Text), "Text %q", c.in)
	}
}

func TestDecodeString(t *testing.T) {
	cases := []struct {
		raw, want, problem string
	}{
		{`"abc"`, "abc", ""},
		{`"a\"b\\c\/d\b\f\n\r\t"`, "a\"b\\c/d\b\f\n\r\t", ""},
		{`"\u00e9\u4e2d"`, "é中", ""},
		{`"\ud83d\ude00"`, "😀", ""},
		{`"\u0000"`, "\x00", ""},
		{`"\ud800"`, "", ProblemSurrogate},
		{`"\ud800x"`, "", ProblemSurrogate},
		{`"\ud800\u0041"`, "", ProblemSurrogate},
		{`"\udc00\ud800"`, "", ProblemSurrogate},
		{`"x\ude00"`, "", ProblemSurrogate},
		{"\"raw\xff\"", "", ProblemUTF8},
		{`"ok é"`, "ok é", ""},
	}
	for _, c := range cases {
		got, p := DecodeString([]byte(c.raw))
		require.Equal(t, c.problem, p, c.raw)
		if p == "" {
			require.Equal(t, c.want, got, c.raw)
		}
	}
}

func TestCheckString(t *testing.T) {
	s, p := CheckString([]byte(`"a\u0000b"`), Name)
	require.Equal(t, ProblemNUL, p)
	require.Empty(t, s)
	s, p = CheckString([]byte(`"line\nok"`), Text)
	require.Empty(t, p)
	require.Equal(t, "line\nok", s)
	_, p = CheckString([]byte(`"line\nok"`), Name)
	require.Equal(t, ProblemControl, p)
}

func TestCheckJSON(t *testing.T) {
	raw := []byte(`{"ok": "fine", "bad": "a\u0000", "list": ["x", "\ud800", {"k\u0001": 1, "n": null}],
		"num": 1.5e3, "t": true, "deep": {"deeper": {"s": "tab\there"}}}`)
	require.True(t, json.Valid(raw))
	d := CheckJSON(raw, "/body", Name)
	require.Equal(t, validation.Details{
		{Path: "/body/bad", Message: ProblemNUL},
		{Path: "/body/list/1", Message: ProblemSurrogate},
		{Path: "/body/list/2/k\x01", Message: "property name " + ProblemControl},
		{Path: "/body/deep/deeper/s", Message: ProblemControl},
	}, d)
	require.Empty(t, CheckJSON([]byte(`{"deep": {"deeper": {"s": "tab\there"}}}`), "", Text))
	require.Empty(t, CheckJSON([]byte(`"plain"`), "/", Name))
	require.Empty(t, CheckJSON([]byte(`[1, 2, [3, {"a": []}], {}]`), "/", Name))

	keys := CheckKeys([]byte(`{"ok": {"inner\u0000": "\u0000"}, "b\u0001ad": {"x": "\ud800"}}`), "/inbox_schemas")
	require.Equal(t, validation.Details{{Path: "/inbox_schemas/b\x01ad", Message: "property name " + ProblemControl}}, keys)

	many := []byte(`[` + repeat(`"\u0000",`, 100) + `"\u0000"]`)
	require.Len(t, CheckJSON(many, "", Name), maxDetails)
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}

func TestSanitize(t *testing.T) {
	require.Equal(t, "plain", Sanitize("plain", 0))
	require.Equal(t, "a\uFFFDb\uFFFDc", Sanitize("a\x00b\xffc", 0))
	require.Equal(t, "ab", Sanitize("abcdef", 2))
	got := Sanitize("ééé", 3) // cut inside the second é
	require.Equal(t, "é", got)
	require.True(t, utf8.ValidString(got))
}

// FuzzDecodeString: whatever json.Valid accepts, DecodeString either reports a problem
// that encoding/json hides (a lone surrogate, invalid UTF-8) or agrees with it exactly.
func FuzzDecodeString(f *testing.F) {
	for _, s := range []string{`"abc"`, `"\ud800"`, `"\ud83d\ude00"`, `"\u0000"`, "\"\xff\"", `"\\\"\/"`, `"\udc00\ud800"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) || len(raw) == 0 || raw[0] != '"' {
			return
		}
		got, p := DecodeString(raw)
		var want string
		require.NoError(t, json.Unmarshal(raw, &want))
		if p == "" {
			require.Equal(t, want, got)
			require.True(t, utf8.ValidString(got))
		}
	})
}

// FuzzCheckJSON: any valid JSON is walked without a panic, and reports no more than the
// cap; a value whose strings all pass reports nothing for a Text walk of the same value
// either.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{`{"a":"b"}`, `[1,"\u0000",{"k":["\ud800"]}]`, `"x"`, `{"":{"":[]}}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		d := CheckJSON(raw, "", Name)
		require.LessOrEqual(t, len(d), maxDetails)
		if len(d) == 0 {
			require.Empty(t, CheckJSON(raw, "", Text))
		}
	})
}

func TestCheckPath(t *testing.T) {
	ok := []string{"/v1/stream/a", "/v1/stream/a/b-c_d.e", "/notebook/n1/main", "/v1/stream/ünï code", "/v1/stream/.hidden", "/v1/stream/a..b"}
	for _, p := range ok {
		require.Empty(t, CheckPath(p, 1024), p)
	}
	bad := map[string]string{
		"/v1/stream/a//b":      "must not contain empty segments (// or a trailing /)",
		"/v1/stream/a/":        "must not contain empty segments (// or a trailing /)",
		"/v1/stream/../../etc": "must not contain . or .. segments",
		"/v1/stream/a/./b":     "must not contain . or .. segments",
		"/v1/stream/a\x00":     ProblemNUL,
		"/v1/stream/a\nb":      ProblemControl,
		"/v1/stream/\xff":      ProblemUTF8,
		"v1/stream/a":          "must start with /",
	}
	for p, want := range bad {
		require.Equal(t, want, CheckPath(p, 1024), "%q", p)
	}
	require.Equal(t, "must be at most 16 bytes", CheckPath("/v1/stream/abcdefgh", 16))
	require.True(t, HasEncodedSlash("/v1/stream/a%2Fb"))
	require.True(t, HasEncodedSlash("/v1/stream/a%2f"))
	require.False(t, HasEncodedSlash("/v1/stream/a%20b%2"))
}
