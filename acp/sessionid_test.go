package acp

import (
	"testing"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/stretchr/testify/require"
)

// A session id names its entity by the entity's URL, with or without a "#" suffix;
// anything else names none.
func TestEntityOfSession(t *testing.T) {
	for id, want := range map[string]string{
		"/assistant/a1":          "assistant a1",
		"/assistant/a1#3f9c0a1b": "assistant a1",
		"/t/x:y@z.w#":            "t x:y@z.w",
		"assistant/a1":           "",
		"sess_17d0":              "",
		"/assistant":             "",
		"/assistant/":            "",
		"/a/b/c":                 "",
		"#/a/b":                  "",
		"":                       "",
	} {
		typ, eid, ok := entityOfSession(sdk.SessionId(id))
		got := ""
		if ok {
			got = typ + " " + eid
		}
		require.Equal(t, want, got, id)
	}
}
