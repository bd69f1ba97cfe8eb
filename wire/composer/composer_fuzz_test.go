package composer

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/validation"
)

// FuzzValidateComposerInput checks that the validator never panics, agrees with
// encoding/json on what is JSON at all, and that whatever it accepts really has the
// invariants handlers rely on, checked with an independent decoder: every node's raw is
// source[start:end) in UTF-16 units (lone surrogates included), and spans are ordered
// and inside the source. The committed corpus is in testdata/fuzz.
func FuzzValidateComposerInput(f *testing.F) {
	for _, c := range validateCases() {
		if !c.absent {
			f.Add([]byte(c.payload))
		}
	}
	f.Add([]byte(canonicalPayload))
	f.Add(benchPayload)

	f.Fuzz(func(t *testing.T, data []byte) {
		got := Validate(data, Limits{})
		require.Equal(t, got, Validate(data, Limits{}), "not deterministic")
		limited := Validate(data, Limits{MaxSourceUnits: 4, MaxNodes: 2})

		switch {
		case len(data) == 0:
			require.Equal(t, validation.Details{{Path: "/", Message: "must be an object"}}, got)
			return
		case !json.Valid(data):
			require.Equal(t, validation.Details{{Path: "/", Message: MsgInvalidJSON}}, got)
			require.Equal(t, got, limited)
			return
		}
		for _, d := range got {
			require.NotEqual(t, MsgInvalidJSON, d.Message, "encoding/json accepts %q", data)
			require.True(t, strings.HasPrefix(d.Path, "/"), d.Path)
		}
		if got != nil {
			require.NotNil(t, limited, "limits never make a payload valid")
			return
		}
		if !utf8.Valid(data) {
			// The oracle below decodes with Go's rules for bad bytes, not the WHATWG ones.
			return
		}

		var top map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(data, &top))
		src := oracleUnits(t, top["source"])
		var nodes []map[string]json.RawMessage
		if raw, ok := top["nodes"]; ok {
			require.NoError(t, json.Unmarshal(raw, &nodes), "accepted nodes must be an array of objects")
		}

		parsed, err := Parse(data)
		require.NoError(t, err)
		require.Len(t, parsed.Nodes, len(nodes))
		require.Equal(t, len(src), utf16Len(parsed.Source))

		previousEnd := 0
		for i, node := range nodes {
			start, end := oracleInt(t, node["start"]), oracleInt(t, node["end"])
			require.True(t, previousEnd <= start && start <= end && end <= len(src),
				"node %d span %d..%d after %d in %d units", i, start, end, previousEnd, len(src))
			raw := oracleUnits(t, node["raw"])
			require.True(t, slices.Equal(src[start:end], raw), "node %d raw %x, source units %x", i, raw, src[start:end])
			previousEnd = end

			require.Equal(t, start, parsed.Nodes[i].Start)
			require.Equal(t, end, parsed.Nodes[i].End)
			require.Equal(t, string(utf16.Decode(src[end:])), parsed.TextAfterNode(parsed.Nodes[i]))
		}
	})
}

// oracleUnits decodes a JSON string token the slow, obvious way, separately from
// unitReader: escapes by hand, everything else through []rune. Valid UTF-8 only.
func oracleUnits(t *testing.T, tok json.RawMessage) []uint16 {
	s, ok := strings.CutPrefix(string(tok), `"`)
	require.True(t, ok, "not a string: %s", tok)
	s = strings.TrimSuffix(s, `"`)
	var out []uint16
	for {
		i := strings.IndexByte(s, '\\')
		if i < 0 {
			return append(out, utf16.Encode([]rune(s))...)
		}
		out = append(out, utf16.Encode([]rune(s[:i]))...)
		if s[i+1] == 'u' {
			v, err := strconv.ParseUint(s[i+2:i+6], 16, 16)
			require.NoError(t, err)
			out = append(out, uint16(v))
			s = s[i+6:]
			continue
		}
		out = append(out, map[byte]uint16{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}[s[i+1]])
		s = s[i+2:]
	}
}

// oracleInt reads an accepted offset with strconv, which must find a small integer.
func oracleInt(t *testing.T, tok json.RawMessage) int {
	f, err := strconv.ParseFloat(string(tok), 64)
	require.NoError(t, err, "offset %s", tok)
	require.Equal(t, float64(int(f)), f, "offset %s", tok)
	return int(f)
}
