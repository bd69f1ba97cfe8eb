package composer

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/validation"
)

// det builds the expected details from path, message pairs.
func det(pairs ...string) validation.Details {
	var d validation.Details
	for i := 0; i+1 < len(pairs); i += 2 {
		d.Add(pairs[i], pairs[i+1])
	}
	return d
}

const (
	mustEqualSlice = "must equal source.slice(start, end)"
	kebab          = "must be a lowercase kebab-case command name"
	overlap        = "must not overlap the previous node"
)

// canonicalPayload is the flat ordered example of spec §1.7.
const canonicalPayload = `{"source":"/pr-review 123 in /worktree see @Branch","nodes":[` +
	`{"kind":"slash_command","start":0,"end":10,"raw":"/pr-review","name":"pr-review"},` +
	`{"kind":"slash_command","start":18,"end":27,"raw":"/worktree","name":"worktree"},` +
	`{"kind":"branch","start":32,"end":39,"raw":"@Branch","name":"Branch"}]}`

type validateCase struct {
	name    string
	payload string
	absent  bool // payload is nil: the field was not sent
	limits  Limits
	want    validation.Details
}

// validateCases is a function rather than a table inside the test so the same cases can
// seed the fuzz target.
func validateCases() []validateCase {
	return []validateCase{
		// Spec §8 (composer-input.test.ts).
		{name: "canonical flat ordered example", payload: canonicalPayload},
		{
			name:    "unknown kind with extra field is accepted",
			payload: `{"source":"fix #42 please","nodes":[{"kind":"issue","start":4,"end":7,"raw":"#42","number":42}]}`,
		},
		{
			name:    "raw differs from the span",
			payload: `{"source":"/quickstart","nodes":[{"kind":"slash_command","start":0,"end":11,"raw":"/quick","name":"quickstart"}]}`,
			want:    det("/nodes/0/raw", mustEqualSlice),
		},
		{
			name: "bad name and overlap",
			payload: `{"source":"/Quick /ok","nodes":[` +
				`{"kind":"slash_command","start":0,"end":6,"raw":"/Quick","name":"Quick"},` +
				`{"kind":"slash_command","start":3,"end":10,"raw":"ick /ok","name":"ok"}]}`,
			want: det("/nodes/0/name", kebab, "/nodes/1/start", overlap),
		},
		{
			name: "multiline: a newline is one unit",
			payload: `{"source":"/pr-review 12\nsee in @Branch","nodes":[` +
				`{"kind":"slash_command","start":0,"end":10,"raw":"/pr-review","name":"pr-review"},` +
				`{"kind":"branch","start":21,"end":28,"raw":"@Branch","name":"Branch"}]}`,
		},

		// Payload shape.
		{name: "absent payload", absent: true, want: det("/", "must be an object")},
		{name: "null payload", payload: `null`, want: det("/", "must be an object")},
		{name: "array payload", payload: `[{"source":"a"}]`, want: det("/", "must be an object")},
		{name: "string payload", payload: `"hello"`, want: det("/", "must be an object")},
		{name: "number payload", payload: ` 42 `, want: det("/", "must be an object")},
		{name: "bool payload", payload: `true`, want: det("/", "must be an object")},
		{name: "invalid JSON", payload: `{"source":"a"`, want: det("/", MsgInvalidJSON)},
		{name: "trailing data", payload: `{"source":"a"} {}`, want: det("/", MsgInvalidJSON)},
		{name: "whitespace only", payload: " \n", want: det("/", MsgInvalidJSON)},
		{name: "invalid JSON inside nodes", payload: `{"source":"a","nodes":[{"kind":tru}]}`, want: det("/", MsgInvalidJSON)},
		{name: "source only", payload: `{"source":"hello"}`},
		{name: "empty source", payload: `{"source":""}`},
		{name: "unknown top-level fields are ignored", payload: `{"source":"a","text":"x","extra":{"deep":[1,2,{"x":null}]}}`},
		{name: "source missing", payload: `{}`, want: det("/source", "must be a string")},
		{name: "source not a string", payload: `{"source":42}`, want: det("/source", "must be a string")},
		{
			name:    "nodes are not inspected when source is invalid",
			payload: `{"source":null,"nodes":[1,{"kind":""}]}`,
			want:    det("/source", "must be a string"),
		},
		{
			name:    "source and nodes both invalid",
			payload: `{"nodes":null}`,
			want:    det("/source", "must be a string", "/nodes", "must be an array"),
		},
		{name: "nodes absent", payload: `{"source":"/go"}`},
		{name: "nodes empty", payload: `{"source":"/go","nodes":[]}`},
		{name: "nodes null", payload: `{"source":"/go","nodes":null}`, want: det("/nodes", "must be an array")},
		{name: "nodes object", payload: `{"source":"/go","nodes":{}}`, want: det("/nodes", "must be an array")},
		{name: "nodes string", payload: `{"source":"/go","nodes":"[]"}`, want: det("/nodes", "must be an array")},
		{
			name:    "nodes that are not objects",
			payload: `{"source":"/go","nodes":[1,null,[],"x",true]}`,
			want: det("/nodes/0", "must be an object", "/nodes/1", "must be an object", "/nodes/2", "must be an object",
				"/nodes/3", "must be an object", "/nodes/4", "must be an object"),
		},
		{
			name:    "duplicate keys: the last one wins",
			payload: `{"source":1,"nodes":5,"source":"/go","nodes":[{"kind":"text","start":"x","raw":"/go","start":0,"end":3}]}`,
		},
		{
			name:    "escaped keys are matched decoded",
			payload: `{"sour\u0063e":"/go","\u006eodes":[{"\u006bind":"slash_command","start":0,"end":3,"raw":"/go","name":"g\u006f"}]}`,
		},

		// Base node checks, in order.
		{
			name:    "empty node reports kind, start, end, raw",
			payload: `{"source":"abc","nodes":[{}]}`,
			want: det("/nodes/0/kind", "must be a non-empty string", "/nodes/0/start", "must be an integer",
				"/nodes/0/end", "must be an integer", "/nodes/0/raw", "must be a string"),
		},
		{
			name:    "empty kind, non-string raw",
			payload: `{"source":"abc","nodes":[{"kind":"","start":0,"end":1,"raw":null}]}`,
			want:    det("/nodes/0/kind", "must be a non-empty string", "/nodes/0/raw", "must be a string"),
		},
		{
			name:    "kind not a string gets no kind-specific check",
			payload: `{"source":"abc","nodes":[{"kind":["file"],"start":0,"end":1,"raw":"a"}]}`,
			want:    det("/nodes/0/kind", "must be a non-empty string"),
		},
		{
			name:    "numeric string start is not an integer, span checks skipped",
			payload: `{"source":"abc","nodes":[{"kind":"text","start":"3","end":1,"raw":"zzz"}]}`,
			want:    det("/nodes/0/start", "must be an integer"),
		},
		{
			name:    "fractional and boolean offsets",
			payload: `{"source":"abc","nodes":[{"kind":"text","start":0.5,"end":true,"raw":"a"}]}`,
			want:    det("/nodes/0/start", "must be an integer", "/nodes/0/end", "must be an integer"),
		},
		{
			name:    "5.0 and 1e1 are integers",
			payload: `{"source":"0123456789","nodes":[{"kind":"text","start":5.0,"end":1e1,"raw":"56789"}]}`,
		},
		{
			name:    "1e2, 50e-1 and 1E0 are integers",
			payload: `{"source":"` + strings.Repeat("x", 100) + `","nodes":[{"kind":"text","start":1E0,"end":50e-1,"raw":"xxxx"},{"kind":"text","start":50e-1,"end":1e2,"raw":"` + strings.Repeat("x", 95) + `"}]}`,
		},
		{
			name:    "-0 passes the integer and >= 0 checks",
			payload: `{"source":"abc","nodes":[{"kind":"text","start":-0,"end":1,"raw":"a"}]}`,
		},
		{
			name:    "1e300 is an integer outside the source; slice clamps so raw matches",
			payload: `{"source":"ab","nodes":[{"kind":"text","start":0,"end":1e300,"raw":"ab"}]}`,
			want:    det("/nodes/0/end", "must be within source"),
		},
		{
			name:    "1e400 is Infinity, not an integer",
			payload: `{"source":"ab","nodes":[{"kind":"text","start":0,"end":1e400,"raw":"ab"}]}`,
			want:    det("/nodes/0/end", "must be an integer"),
		},
		{
			name:    "end past source with matching clamped raw",
			payload: `{"source":"ab","nodes":[{"kind":"text","start":0,"end":5,"raw":"ab"}]}`,
			want:    det("/nodes/0/end", "must be within source"),
		},
		{
			name:    "end past source with a different raw",
			payload: `{"source":"ab","nodes":[{"kind":"text","start":0,"end":5,"raw":"abc"}]}`,
			want:    det("/nodes/0/end", "must be within source", "/nodes/0/raw", mustEqualSlice),
		},
		{
			name:    "negative first start gives two issues",
			payload: `{"source":"abc","nodes":[{"kind":"text","start":-1,"end":2,"raw":""}]}`,
			want:    det("/nodes/0/start", "must be >= 0", "/nodes/0/start", overlap),
		},
		{
			name:    "negative start slices from the end",
			payload: `{"source":"abc","nodes":[{"kind":"text","start":-1,"end":2,"raw":"ab"}]}`,
			want:    det("/nodes/0/start", "must be >= 0", "/nodes/0/start", overlap, "/nodes/0/raw", mustEqualSlice),
		},
		{
			name:    "very negative start clamps at zero",
			payload: `{"source":"abc","nodes":[{"kind":"text","start":-1e300,"end":2,"raw":"ab"}]}`,
			want:    det("/nodes/0/start", "must be >= 0", "/nodes/0/start", overlap),
		},
		{
			name:    "inverted span",
			payload: `{"source":"abc","nodes":[{"kind":"text","start":2,"end":1,"raw":""}]}`,
			want:    det("/nodes/0/end", "must be >= start"),
		},
		{
			name: "an inverted node does not move the watermark",
			payload: `{"source":"abc","nodes":[{"kind":"text","start":2,"end":1,"raw":""},` +
				`{"kind":"text","start":0,"end":1,"raw":"a"}]}`,
			want: det("/nodes/0/end", "must be >= start"),
		},
		{
			name: "an overlapping node does not move the watermark",
			payload: `{"source":"abcd","nodes":[{"kind":"text","start":0,"end":2,"raw":"ab"},` +
				`{"kind":"text","start":1,"end":4,"raw":"bcd"},{"kind":"text","start":2,"end":3,"raw":"c"}]}`,
			want: det("/nodes/1/start", overlap),
		},
		{
			name: "an end past the source moves the watermark",
			payload: `{"source":"abc","nodes":[{"kind":"text","start":0,"end":5,"raw":"abc"},` +
				`{"kind":"text","start":3,"end":3,"raw":""}]}`,
			want: det("/nodes/0/end", "must be within source", "/nodes/1/start", overlap),
		},
		{
			name: "adjacent, zero-width and gapped nodes",
			payload: `{"source":"/a /b c","nodes":[{"kind":"text","start":0,"end":0,"raw":""},` +
				`{"kind":"slash_command","start":0,"end":2,"raw":"/a","name":"a"},{"kind":"text","start":2,"end":3,"raw":" "},` +
				`{"kind":"slash_command","start":3,"end":5,"raw":"/b","name":"b"},{"kind":"text","start":7,"end":7,"raw":""}]}`,
		},
		{
			name: "nodes reported in order with their index",
			payload: `{"source":"abc","nodes":[{"kind":"text","start":0,"end":1,"raw":"a"},7,` +
				`{"kind":"text","start":1,"end":2,"raw":"x"}]}`,
			want: det("/nodes/1", "must be an object", "/nodes/2/raw", mustEqualSlice),
		},
		{
			name:    "escaped raw compares decoded",
			payload: `{"source":"\/go \u0041","nodes":[{"kind":"slash_command","start":0,"end":3,"raw":"\u002fgo","name":"go"},{"kind":"text","start":3,"end":5,"raw":" A"}]}`,
		},

		// UTF-16 offsets.
		{
			name:    "emoji is two units",
			payload: `{"source":"😀 /go","nodes":[{"kind":"text","start":0,"end":2,"raw":"😀"},{"kind":"slash_command","start":3,"end":6,"raw":"/go","name":"go"}]}`,
		},
		{
			name:    "rune offsets are wrong",
			payload: `{"source":"😀 /go","nodes":[{"kind":"slash_command","start":2,"end":5,"raw":"/go","name":"go"}]}`,
			want:    det("/nodes/0/raw", mustEqualSlice),
		},
		{
			name:    "emoji length counts in units for within source",
			payload: `{"source":"😀","nodes":[{"kind":"text","start":0,"end":3,"raw":"😀"}]}`,
			want:    det("/nodes/0/end", "must be within source"),
		},
		{
			name:    "precomposed é is one unit",
			payload: `{"source":"é /go","nodes":[{"kind":"slash_command","start":2,"end":5,"raw":"/go","name":"go"}]}`,
		},
		{
			name:    "combining mark is its own unit",
			payload: `{"source":"e\u0301 /go","nodes":[{"kind":"text","start":0,"end":2,"raw":"e\u0301"},{"kind":"slash_command","start":3,"end":6,"raw":"/go","name":"go"}]}`,
		},
		{
			name:    "no normalization: precomposed raw against decomposed source",
			payload: `{"source":"e\u0301","nodes":[{"kind":"text","start":0,"end":2,"raw":"é"}]}`,
			want:    det("/nodes/0/raw", mustEqualSlice),
		},
		{
			name:    "CJK is one unit per character",
			payload: `{"source":"你好 /go","nodes":[{"kind":"text","start":0,"end":2,"raw":"你好"},{"kind":"slash_command","start":3,"end":6,"raw":"/go","name":"go"}]}`,
		},
		{
			name:    "CRLF is two units",
			payload: `{"source":"a\r\n/go","nodes":[{"kind":"text","start":1,"end":3,"raw":"\r\n"},{"kind":"slash_command","start":3,"end":6,"raw":"/go","name":"go"}]}`,
		},
		{
			name:    "a span splitting a surrogate pair matches the lone high surrogate, as in JS",
			payload: `{"source":"😀","nodes":[{"kind":"text","start":0,"end":1,"raw":"\ud83d"},{"kind":"text","start":1,"end":2,"raw":"\uDE00"}]}`,
		},
		{
			name:    "an escaped pair equals the raw UTF-8 emoji",
			payload: `{"source":"\ud83d\ude00","nodes":[{"kind":"text","start":0,"end":2,"raw":"😀"}]}`,
		},
		{
			name:    "a lone surrogate is not U+FFFD",
			payload: `{"source":"😀","nodes":[{"kind":"text","start":0,"end":1,"raw":"\ufffd"}]}`,
			want:    det("/nodes/0/raw", mustEqualSlice),
		},
		{
			name:    "a lone surrogate in the source",
			payload: `{"source":"a\udc00b","nodes":[{"kind":"text","start":1,"end":2,"raw":"\udc00"},{"kind":"text","start":2,"end":3,"raw":"b"}]}`,
		},

		// Kind-specific checks.
		{
			name:    "slash_command without a name",
			payload: `{"source":"/go","nodes":[{"kind":"slash_command","start":0,"end":3,"raw":"/go"}]}`,
			want:    det("/nodes/0/name", kebab),
		},
		{
			name: "slash_command names outside the grammar",
			payload: `{"source":"abcdef","nodes":[{"kind":"slash_command","start":0,"end":1,"raw":"a","name":"/go"},` +
				`{"kind":"slash_command","start":1,"end":2,"raw":"b","name":"a--b"},{"kind":"slash_command","start":2,"end":3,"raw":"c","name":5},` +
				`{"kind":"slash_command","start":3,"end":4,"raw":"d","name":""},{"kind":"slash_command","start":4,"end":5,"raw":"e","name":"pr_review"},` +
				`{"kind":"slash_command","start":5,"end":6,"raw":"f","name":"pr-review-"}]}`,
			want: det("/nodes/0/name", kebab, "/nodes/1/name", kebab, "/nodes/2/name", kebab,
				"/nodes/3/name", kebab, "/nodes/4/name", kebab, "/nodes/5/name", kebab),
		},
		{
			name:    "slash_command name need not match raw, and an escaped name is decoded",
			payload: `{"source":"/x","nodes":[{"kind":"slash_command","start":0,"end":2,"raw":"/x","name":"pr\u002dreview2"}]}`,
		},
		{
			name: "file needs a non-empty path; the message says string",
			payload: `{"source":"ab","nodes":[{"kind":"file","start":0,"end":1,"raw":"a","path":""},` +
				`{"kind":"file","start":1,"end":2,"raw":"b"},{"kind":"file","start":2,"end":2,"raw":"","path":"README.md"}]}`,
			want: det("/nodes/0/path", "must be a string", "/nodes/1/path", "must be a string"),
		},
		{
			name: "symbol and branch need a non-empty name",
			payload: `{"source":"abc","nodes":[{"kind":"symbol","start":0,"end":1,"raw":"a","name":""},` +
				`{"kind":"branch","start":1,"end":2,"raw":"b","name":7},{"kind":"branch","start":2,"end":3,"raw":"c","name":"Main Branch!"}]}`,
			want: det("/nodes/0/name", "must be a non-empty string", "/nodes/1/name", "must be a non-empty string"),
		},
		{
			name:    "text and unknown kinds have no field checks",
			payload: `{"source":"ab","nodes":[{"kind":"text","start":0,"end":1,"raw":"a","name":5},{"kind":"issue","start":1,"end":2,"raw":"b"}]}`,
		},
		{
			name:    "kind-specific check follows base errors",
			payload: `{"source":"ab","nodes":[{"kind":"branch","start":0,"end":3,"raw":"ab"}]}`,
			want:    det("/nodes/0/end", "must be within source", "/nodes/0/name", "must be a non-empty string"),
		},

		// entityd limits.
		{
			name:    "source within the unit limit",
			payload: `{"source":"😀a"}`,
			limits:  Limits{MaxSourceUnits: 3},
		},
		{
			name:    "source over the unit limit counts UTF-16 units",
			payload: `{"source":"😀😀"}`,
			limits:  Limits{MaxSourceUnits: 3},
			want:    det("/source", MaxSourceUnitsMessage(3)),
		},
		{
			name:    "source limit comes before node issues",
			payload: `{"source":"abcd","nodes":[{"kind":"text","start":0,"end":1,"raw":"x"}]}`,
			limits:  Limits{MaxSourceUnits: 3},
			want:    det("/source", "must be at most 3 characters (UTF-16 code units)", "/nodes/0/raw", mustEqualSlice),
		},
		{
			name:    "nodes within the limit",
			payload: `{"source":"ab","nodes":[{"kind":"text","start":0,"end":1,"raw":"a"}]}`,
			limits:  Limits{MaxNodes: 1},
		},
		{
			name:    "nodes over the limit are not inspected",
			payload: `{"source":"ab","nodes":[1,2]}`,
			limits:  Limits{MaxNodes: 1},
			want:    det("/nodes", "must contain at most 1 nodes"),
		},
		{
			name:    "node limit applies even when source is invalid",
			payload: `{"source":5,"nodes":[1,2,3]}`,
			limits:  Limits{MaxSourceUnits: 1, MaxNodes: 2},
			want:    det("/source", "must be a string", "/nodes", MaxNodesMessage(2)),
		},
	}
}

func TestValidateComposerInput(t *testing.T) {
	t.Parallel()
	for _, tt := range validateCases() {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var payload []byte
			if !tt.absent {
				payload = []byte(tt.payload)
			}
			require.Equal(t, tt.want, Validate(payload, tt.limits))
		})
	}
}

func TestValidateComposerInputEmptyIsAbsent(t *testing.T) {
	t.Parallel()
	require.Equal(t, det("/", "must be an object"), Validate([]byte{}, Limits{}))
}

func TestValidateComposerInputDeepNesting(t *testing.T) {
	t.Parallel()
	ok := `{"source":"a","x":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`
	require.Nil(t, Validate([]byte(ok), Limits{}))
	tooDeep := `{"source":"a","x":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`
	require.Equal(t, det("/", MsgInvalidJSON), Validate([]byte(tooDeep), Limits{}))
}

func TestComposerHelpersCanonical(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte(canonicalPayload))
	require.NoError(t, err)
	require.Equal(t, "/pr-review 123 in /worktree see @Branch", c.Source)
	require.Len(t, c.Nodes, 3)

	cmds := c.SlashCommandNodes()
	require.Len(t, cmds, 2)
	require.Equal(t, "pr-review", cmds[0].Name)
	require.True(t, c.HasSlashCommand("worktree"))
	require.False(t, c.HasSlashCommand("/worktree"))
	require.False(t, c.HasSlashCommand("Branch"))

	first, ok := c.FirstSlashCommand()
	require.True(t, ok)
	require.Equal(t, Node{
		Kind: NodeKindSlashCommand, Start: 0, End: 10, Raw: "/pr-review", Name: "pr-review",
		Fields: map[string]json.RawMessage{
			"kind": json.RawMessage(`"slash_command"`), "start": json.RawMessage(`0`), "end": json.RawMessage(`10`),
			"raw": json.RawMessage(`"/pr-review"`), "name": json.RawMessage(`"pr-review"`),
		},
	}, first)
	require.Equal(t, " 123 in /worktree see @Branch", c.TextAfterNode(first))

	require.Len(t, c.KnownNodes(), 3)
	require.Empty(t, c.UnknownNodes())
	require.Equal(t, NodeKindBranch, c.Nodes[2].Kind)
	require.Equal(t, "Branch", c.Nodes[2].Name)
}

func TestComposerHelpersUnknownKind(t *testing.T) {
	t.Parallel()
	payload := `{"source":"fix #42 /go","nodes":[{"kind":"issue","start":4,"end":7,"raw":"#42","number":42},` +
		`{"kind":"slash_command","start":8,"end":11,"raw":"/go","name":"go","unknown":true}]}`
	require.Nil(t, Validate([]byte(payload), Limits{}))
	c, err := Parse([]byte(payload))
	require.NoError(t, err)

	unknown := c.UnknownNodes()
	require.Len(t, unknown, 1)
	require.Equal(t, "issue", unknown[0].Kind)
	require.False(t, unknown[0].IsKnown())
	require.Equal(t, json.RawMessage(`42`), unknown[0].Fields["number"])

	known := c.KnownNodes()
	require.Len(t, known, 1)
	require.Equal(t, json.RawMessage(`true`), known[0].Fields["unknown"])
	require.Equal(t, "", c.TextAfterNode(known[0]))
}

func TestComposerNodeIsKnown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		node string
		want bool
	}{
		{`{"kind":"text","start":0,"end":0}`, true},
		{`{"kind":"slash_command","start":0,"end":0,"name":""}`, true}, // a string, even empty, like hasStringField
		{`{"kind":"slash_command","start":0,"end":0}`, false},
		{`{"kind":"slash_command","start":0,"end":0,"name":null}`, false},
		{`{"kind":"file","start":0,"end":0,"path":"a.go"}`, true},
		{`{"kind":"file","start":0,"end":0,"name":"a.go"}`, false},
		{`{"kind":"symbol","start":0,"end":0,"name":"Foo"}`, true},
		{`{"kind":"branch","start":0,"end":0,"name":"main"}`, true},
		{`{"kind":"branch","start":0,"end":0,"path":"main"}`, false},
		{`{"kind":"issue","start":0,"end":0,"name":"x"}`, false},
		{`{"kind":7,"start":0,"end":0}`, false},
	}
	for _, tt := range tests {
		c, err := Parse([]byte(`{"source":"","nodes":[` + tt.node + `]}`))
		require.NoError(t, err, tt.node)
		require.Equal(t, tt.want, c.Nodes[0].IsKnown(), tt.node)
	}
}

func TestComposerSlashCommandHelpers(t *testing.T) {
	t.Parallel()
	// Several commands: a nameless slash_command is skipped like getSlashCommandNodes does.
	payload := `{"source":"/a /b /c rest","nodes":[{"kind":"slash_command","start":0,"end":2,"raw":"/a"},` +
		`{"kind":"slash_command","start":3,"end":5,"raw":"/b","name":"b"},{"kind":"slash_command","start":6,"end":8,"raw":"/c","name":"c"}]}`
	c, err := Parse([]byte(payload))
	require.NoError(t, err)
	require.Len(t, c.SlashCommandNodes(), 2)
	first, ok := c.FirstSlashCommand()
	require.True(t, ok)
	require.Equal(t, "b", first.Name)
	require.Equal(t, " /c rest", c.TextAfterNode(first))
	require.True(t, c.HasSlashCommand("c"))
	require.False(t, c.HasSlashCommand("a"))

	none, err := Parse([]byte(`{"source":"plain"}`))
	require.NoError(t, err)
	_, ok = none.FirstSlashCommand()
	require.False(t, ok)
	require.Nil(t, none.SlashCommandNodes())
	require.False(t, none.HasSlashCommand("plain"))
}

func TestComposerTextAfterNode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		source string
		end    int
		want   string
	}{
		{name: "ascii", source: "/goal set x", end: 5, want: " set x"},
		{name: "after emoji counts units", source: "😀/go now", end: 5, want: " now"},
		{name: "cut inside a pair leaves a lone low surrogate", source: "a😀b", end: 2, want: "\uFFFDb"},
		{name: "at the end", source: "abc", end: 3, want: ""},
		{name: "past the end clamps", source: "abc", end: 9, want: ""},
		{name: "negative counts from the end", source: "abc", end: -1, want: "c"},
		{name: "very negative clamps at zero", source: "abc", end: -10, want: "abc"},
		{name: "CJK and CRLF", source: "你好\r\n/x y", end: 6, want: " y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &Input{Source: tt.source}
			require.Equal(t, tt.want, c.TextAfterNode(Node{End: tt.end}))
		})
	}
}

func TestParseComposerInput(t *testing.T) {
	t.Parallel()
	t.Run("lone surrogates become U+FFFD without shifting offsets", func(t *testing.T) {
		t.Parallel()
		payload := `{"source":"\ud83dx /go","nodes":[{"kind":"slash_command","start":3,"end":6,"raw":"/go","name":"go"}]}`
		require.Nil(t, Validate([]byte(payload), Limits{}))
		c, err := Parse([]byte(payload))
		require.NoError(t, err)
		require.Equal(t, "\uFFFDx /go", c.Source)
		require.Equal(t, "", c.TextAfterNode(c.Nodes[0]))
		require.Equal(t, 6, utf16Len(c.Source))
	})
	t.Run("fields keep the bytes as sent and later keys win", func(t *testing.T) {
		t.Parallel()
		payload := []byte(`{"source":"ab","nodes":[{"kind":"text","start":1, "end":0,"end" : 2.0e0,"raw":"b","x":{ "y" : [1, 2] }}]}`)
		c, err := Parse(payload)
		require.NoError(t, err)
		copy(payload, make([]byte, len(payload))) // the result does not alias the caller's buffer
		n := c.Nodes[0]
		require.Equal(t, 1, n.Start)
		require.Equal(t, 2, n.End)
		require.Equal(t, json.RawMessage(`2.0e0`), n.Fields["end"])
		require.Equal(t, json.RawMessage(`{ "y" : [1, 2] }`), n.Fields["x"])
		require.Len(t, n.Fields, 5)
	})
	t.Run("null nodes mean none", func(t *testing.T) {
		t.Parallel()
		c, err := Parse([]byte(`{"source":"a","nodes":null}`))
		require.NoError(t, err)
		require.Equal(t, &Input{Source: "a"}, c)
	})
	for _, bad := range []string{
		``, `null`, `[]`, `{"text":"edited"}`, `{"source":1}`, `{"source":"a"`, `{"source":"a","nodes":{}}`,
		`{"source":"a","nodes":[1]}`, `{"source":"a","nodes":[{"kind":"text","start":"0","end":1}]}`,
		`{"source":"a","nodes":[{"kind":"text","start":0}]}`, `{"source":"a","nodes":[{"kind":"text","start":0,"end":1e300}]}`,
	} {
		_, err := Parse([]byte(bad))
		require.ErrorIs(t, err, ErrInvalid, bad)
	}
}

func TestDecodeUnits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		content string // string token content, as between the quotes
		want    []uint16
	}{
		{name: "ascii", content: `ab`, want: []uint16{'a', 'b'}},
		{name: "escapes", content: `\"\\\/\b\f\n\r\t`, want: []uint16{'"', '\\', '/', '\b', '\f', '\n', '\r', '\t'}},
		{name: "lone high surrogate kept", content: `\ud83d`, want: []uint16{0xD83D}},
		{name: "lone low surrogate kept", content: `x\uDE00`, want: []uint16{'x', 0xDE00}},
		{name: "escaped pair", content: `\ud83d\ude00`, want: []uint16{0xD83D, 0xDE00}},
		{name: "utf-8 emoji", content: "😀", want: []uint16{0xD83D, 0xDE00}},
		{name: "utf-8 bmp", content: "é你", want: []uint16{0xE9, 0x4F60}},
		// Invalid UTF-8 as a JS client decodes it (WHATWG): one U+FFFD per maximal subpart.
		{name: "truncated 3-byte sequence is one replacement", content: "\xe2\x82A", want: []uint16{0xFFFD, 'A'}},
		{name: "truncated 4-byte sequence is one replacement", content: "\xf0\x9f\x98", want: []uint16{0xFFFD}},
		{name: "encoded surrogate is three replacements", content: "\xed\xa0\x80", want: []uint16{0xFFFD, 0xFFFD, 0xFFFD}},
		{name: "stray continuation and bad lead", content: "\x80\xff", want: []uint16{0xFFFD, 0xFFFD}},
		{name: "overlong is per byte", content: "\xc0\xaf", want: []uint16{0xFFFD, 0xFFFD}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := appendUnits(nil, []byte(tt.content))
			require.Equal(t, tt.want, got)
			require.Equal(t, len(tt.want), countUnits([]byte(tt.content)))
			require.True(t, equalUnits([]byte(tt.content), tt.want))
			require.Equal(t, len(tt.want), utf16Len(decodeString([]byte(tt.content))))
		})
	}
}

func TestMaximalSubpartNeverZero(t *testing.T) {
	t.Parallel()
	for b := 0; b < 256; b++ {
		require.GreaterOrEqual(t, maximalSubpart([]byte{byte(b)}), 1)
	}
}

// benchPayload is a typical desktop send: ~300 bytes, three nodes.
var benchPayload = []byte(`{"source":"/pr-review 123 in /worktree see @Branch please","nodes":[` +
	`{"kind":"slash_command","start":0,"end":10,"raw":"/pr-review","name":"pr-review"},` +
	`{"kind":"slash_command","start":18,"end":27,"raw":"/worktree","name":"worktree","unknown":true},` +
	`{"kind":"branch","start":32,"end":39,"raw":"@Branch","name":"Branch"}]}`)

func BenchmarkValidateComposerInput(b *testing.B) {
	limits := Limits{MaxSourceUnits: 100_000, MaxNodes: 1_000}
	if d := Validate(benchPayload, limits); d != nil {
		b.Fatal(d)
	}
	b.SetBytes(int64(len(benchPayload)))
	b.ReportAllocs()
	for b.Loop() {
		Validate(benchPayload, limits)
	}
}

func BenchmarkParseComposerInput(b *testing.B) {
	b.SetBytes(int64(len(benchPayload)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(benchPayload); err != nil {
			b.Fatal(err)
		}
	}
}
