package composer

import (
	"encoding/json"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func knownOf(names ...string) func(string) bool {
	return func(n string) bool {
		for _, k := range names {
			if k == n {
				return true
			}
		}
		return false
	}
}

// The reference's own examples (spec §2.2) and the cases bridges depend on: UTF-16
// offsets after astral characters and combining marks, JavaScript's whitespace.
func TestSerializeComposerInput(t *testing.T) {
	known := knownOf("quickstart", "pr-review")
	cases := []struct{ source, want string }{
		{"please /quickstart\nthen /pr-review now",
			`{"source":"please /quickstart\nthen /pr-review now","nodes":[` +
				`{"kind":"slash_command","start":7,"end":18,"raw":"/quickstart","name":"quickstart"},` +
				`{"kind":"slash_command","start":24,"end":34,"raw":"/pr-review","name":"pr-review"}]}`},
		{"/QuickStart /bad_command /also--bad", `{"source":"/QuickStart /bad_command /also--bad"}`},
		{"/new-command with details",
			`{"source":"/new-command with details","nodes":[{"kind":"slash_command","start":0,"end":12,"raw":"/new-command","name":"new-command","unknown":true}]}`},
		{"👋 /pr-review 7",
			`{"source":"👋 /pr-review 7","nodes":[{"kind":"slash_command","start":3,"end":13,"raw":"/pr-review","name":"pr-review"}]}`},
		{"日本語\u3000/quickstart", // an ideographic space is whitespace to JavaScript
			`{"source":"日本語\u3000/quickstart","nodes":[{"kind":"slash_command","start":4,"end":15,"raw":"/quickstart","name":"quickstart"}]}`},
		{"e\u0301 /quickstart.", `{"source":"e\u0301 /quickstart."}`},
		{"e\u0301 /quickstart", // a combining mark is a unit of its own
			`{"source":"e\u0301 /quickstart","nodes":[{"kind":"slash_command","start":3,"end":14,"raw":"/quickstart","name":"quickstart"}]}`},
		{"path/to /a/b x/quickstart", `{"source":"path/to /a/b x/quickstart"}`},
		{"/quickstart/quickstart", `{"source":"/quickstart/quickstart"}`},
		{"", `{"source":""}`},
	}
	for _, c := range cases {
		got := Serialize(c.source, known)
		require.JSONEq(t, c.want, string(got), c.source)
		require.Nil(t, Validate(got, Limits{}), c.source)
	}
}

// FuzzSerializeComposerInput: whatever the text, the payload passes the server's own
// validator and each node's raw is the text at its UTF-16 span.
func FuzzSerializeComposerInput(f *testing.F) {
	for _, s := range []string{"please /quickstart\nthen /pr-review now", "👋 /pr-review 7", "a /b /c", "/x-", "\u2028/y", "é/z /w"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, source string) {
		if !utf8.ValidString(source) {
			return
		}
		out := Serialize(source, knownOf("b"))
		if d := Validate(out, Limits{}); d != nil {
			t.Fatalf("%q → %s: %v", source, out, d)
		}
		var p struct {
			Source string `json:"source"`
			Nodes  []struct {
				Start, End int
				Raw        string
			} `json:"nodes"`
		}
		if err := json.Unmarshal(out, &p); err != nil {
			t.Fatal(err)
		}
		units := utf16.Encode([]rune(p.Source))
		for _, n := range p.Nodes {
			if got := string(utf16.Decode(units[n.Start:n.End])); got != n.Raw {
				t.Fatalf("%q: span %d..%d is %q, raw %q", source, n.Start, n.End, got, n.Raw)
			}
		}
	})
}
