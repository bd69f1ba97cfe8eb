package membership

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHashMatchesTheRuntime: the tag hash is the runtime's hashString of
// JSON.stringify(normalizeTags(tags)) (values computed with the runtime's code in Node).
func TestHashMatchesTheRuntime(t *testing.T) {
	require.Equal(t, "9fb13cabc8e102d1", hashString(stringify(map[string]string{"team": "a"})))
	// UTF-16 code units (a surrogate pair is two), and <, > and & unescaped
	require.Equal(t, "81a6a2de6c766089", hashString(stringify(map[string]string{"é<&>": "😀"})))
	// keys sorted, whatever order they came in
	a := SourceRef(map[string]string{"b": "1", "a": "2"}, "user", "/principal/user%3Aalice")
	b := SourceRef(map[string]string{"a": "2", "b": "1"}, "user", "/principal/user%3Aalice")
	require.Equal(t, a, b)
	require.NotEqual(t, a, SourceRef(map[string]string{"a": "2", "b": "1"}, "user", "/principal/user%3Abob"))
}
