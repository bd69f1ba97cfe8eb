package editortool_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/leakcheck"
	"github.com/entityd/entityd/internal/schemas"
	"github.com/entityd/entityd/wire/editortool"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

func TestPromptSession(t *testing.T) {
	for key, want := range map[string]string{
		"acp-sess_0a1b2c-1-deadbeef":   "sess_0a1b2c",
		"acp-sess-with-dashes-12-00ff": "sess-with-dashes",
		"acp-s-7-a":                    "s",
	} {
		got, ok := editortool.PromptSession(key)
		require.True(t, ok, key)
		require.Equal(t, want, got, key)
	}
	for _, key := range []string{"", "acp-", "msg-1", "acp-sess-1", "acp-sess-x-ab", "acp-sess-1-XY", "acp--1-ab", "other-sess-1-ab"} {
		_, ok := editortool.PromptSession(key)
		require.False(t, ok, key)
	}
}

func TestValidCallID(t *testing.T) {
	for _, id := range []string{"call_0123", "a", "x.y:z-1", strings.Repeat("a", editortool.MaxCallIDBytes)} {
		require.True(t, editortool.ValidCallID(id), id)
	}
	for _, id := range []string{"", "a b", "a/b", "é", strings.Repeat("a", editortool.MaxCallIDBytes+1)} {
		require.False(t, editortool.ValidCallID(id), id)
	}
	require.LessOrEqual(t, len(editortool.ResultKey(strings.Repeat("a", editortool.MaxCallIDBytes))), 256,
		"a result key fits the server's key limit")
}

func TestResultText(t *testing.T) {
	r := editortool.Result{Content: []json.RawMessage{editortool.TextContent("one"),
		json.RawMessage(`{"type":"image","data":"aGk=","mimeType":"image/png"}`), editortool.TextContent("two")}}
	require.Equal(t, "one\ntwo", r.Text())
	require.JSONEq(t, `{"type":"text","text":"a \"quote\""}`, string(editortool.TextContent(`a "quote"`)))
}

// The inbox schemas compile and accept what the adapter sends, and refuse what it never
// sends.
func TestInboxSchemas(t *testing.T) {
	offer, err := json.Marshal(editortool.Offer{Session: "sess_1", Version: 1,
		Servers: []editortool.Server{{Name: "files", Status: editortool.StatusRunning}, {Name: "gone", Status: editortool.StatusFailed, Error: "exec: not found"}},
		Tools:   []editortool.Tool{{Server: "files", Name: "read", InputSchema: json.RawMessage(`{"type":"object"}`)}}})
	require.NoError(t, err)
	result, err := json.Marshal(editortool.Result{CallID: "call_1", Session: "sess_1", Server: "files", Tool: "read",
		Content: []json.RawMessage{editortool.TextContent("hi")}})
	require.NoError(t, err)
	cases := []struct {
		typ     string
		payload string
		ok      bool
	}{
		{editortool.OfferType, string(offer), true},
		{editortool.ResultType, string(result), true},
		{editortool.OfferType, `{"session":"s","version":1,"servers":[],"tools":[{"name":"x"}]}`, false},
		{editortool.ResultType, `{"call_id":"","session":"s","server":"a","tool":"b","is_error":false,"content":[]}`, false},
		{editortool.ResultType, `{"call_id":"c"}`, false},
	}
	all := editortool.InboxSchemas()
	require.Len(t, all, 2)
	for _, c := range cases {
		s, err := schemas.Compile(all[c.typ])
		require.NoError(t, err)
		d := s.Validate([]byte(c.payload))
		if c.ok {
			require.Nil(t, d, "%s %s", c.typ, c.payload)
		} else {
			require.NotNil(t, d, "%s %s", c.typ, c.payload)
		}
	}
}
