package slashcmd

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestInvocationIsUnambiguous(t *testing.T) {
	opt := []string{"a", "b"}
	cases := []struct {
		args map[string]string
		text string
	}{
		{map[string]string{"a": "b=x"}, `/opt2 "b=x"`}, // a value that looks like b=x
		{map[string]string{"b": "x"}, `/opt2 b=x`},     // b, after a skipped a
		{map[string]string{"a": "x", "b": "y z"}, `/opt2 x "y z"`},
		{map[string]string{"a": ""}, `/opt2 ""`},
		{map[string]string{"a": `say "hi"`, "b": `c:\dir`}, `/opt2 "say \"hi\"" "c:\\dir"`},
		{map[string]string{"a": "<tag>&"}, `/opt2 <tag>&`},
		{map[string]string{}, `/opt2`},
	}
	for _, c := range cases {
		text := Invocation("opt2", opt, c.args)
		require.Equal(t, c.text, text)
		name, got, err := ParseInvocation(text, opt)
		require.NoError(t, err, text)
		require.Equal(t, "opt2", name)
		require.Equal(t, c.args, got, text)
	}
	require.NotEqual(t, Invocation("opt2", opt, map[string]string{"a": "b=x"}),
		Invocation("opt2", opt, map[string]string{"b": "x"}))
}

func TestParseInvocationRefusesWhatItCannotRead(t *testing.T) {
	for _, text := range []string{"opt2 x", "/", `/opt2 "open`, `/opt2 x y z`, `/opt2 a=1 a=2`, `/opt2 "\q"`} {
		_, _, err := ParseInvocation(text, []string{"a", "b"})
		require.ErrorIs(t, err, ErrInvocation, text)
	}
}

// FuzzInvocationRoundTrip: whatever values a client sends (MCP prompt arguments are JSON
// strings, so valid UTF-8), the text parses back to the same arguments.
func FuzzInvocationRoundTrip(f *testing.F) {
	f.Add("b=x", "", true, false)
	f.Add("", "x", false, true)
	f.Add("a b", `"q" \ '`, true, true)
	f.Add("\u00a0x", "y\u3000", true, true)
	f.Fuzz(func(t *testing.T, a, b string, hasA, hasB bool) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			return
		}
		args := map[string]string{}
		if hasA {
			args["a"] = a
		}
		if hasB {
			args["b"] = b
		}
		text := Invocation("cmd", []string{"a", "b"}, args)
		name, got, err := ParseInvocation(text, []string{"a", "b"})
		if err != nil || name != "cmd" || len(got) != len(args) || got["a"] != args["a"] || got["b"] != args["b"] {
			t.Fatalf("%q: got %q %v %v, want %v", text, name, got, err, args)
		}
	})
}
