package runtime_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/runtime"
	"github.com/entityd/entityd/wake"
	"github.com/entityd/entityd/wire/editortool"
)

// toolSeen is what the editor-tools handler saw on one wake.
type toolSeen struct {
	key      string
	session  string
	sets     []runtime.EditorToolset
	current  *runtime.EditorToolset
	callID   string
	callErrs []string
	result   *runtime.EditorToolResult
}

// TestEditorTools: a type that declares strict inbox and state schemas opts into editor
// tools with EditorToolInboxSchemas; its handler sees the offers, knows which session a
// prompt came from, calls a tool (an editor_tool_call event the state schemas do not
// cover), gets the result, and sees a closed session's tools go.
func TestEditorTools(t *testing.T) {
	seen := make(chan toolSeen, 16)
	inbox := map[string]json.RawMessage{"composer_input": json.RawMessage(`{"type":"object"}`)}
	maps.Copy(inbox, runtime.EditorToolInboxSchemas())
	def := runtime.EntityDefinition{
		Type:         "tooluser",
		InboxSchemas: inbox,
		StateSchemas: map[string]json.RawMessage{"progress": json.RawMessage(`{"type":"object"}`)},
		Handler: func(ctx *runtime.Context) error {
			w, ok := ctx.Wake.(runtime.InboxWake)
			if !ok {
				return nil
			}
			s := toolSeen{key: w.Key, session: ctx.EditorSession(), sets: ctx.EditorToolsets()}
			if cur, ok := ctx.EditorTools(); ok {
				s.current = &cur
			}
			if r, ok := runtime.EditorToolResultOf(w); ok {
				s.result = r
			}
			if _, ok := w.ComposerInput(); ok && s.current != nil {
				for _, bad := range []runtime.EditorToolCall{
					{Server: "files", Tool: "read"},
					{Session: s.session, Server: "files", Tool: "read", Arguments: []int{1}},
					{Session: s.session, Server: "files", Tool: "read", ID: "has space"},
					{Session: s.session, Server: "files", Tool: "read", Arguments: json.RawMessage(`{`)},
				} {
					_, err := ctx.CallEditorTool(bad)
					if err == nil {
						s.callErrs = append(s.callErrs, "accepted")
					} else {
						s.callErrs = append(s.callErrs, err.Error())
					}
				}
				tool := s.current.Tools[0]
				id, err := ctx.CallEditorTool(runtime.EditorToolCall{Session: s.current.Session, Server: tool.Server,
					Tool: tool.Name, Arguments: map[string]any{"path": "/etc/hostname"}})
				if err != nil {
					return err
				}
				s.callID = id
				if err := ctx.WriteText("calling " + tool.Server + "/" + tool.Name); err != nil {
					return err
				}
			}
			seen <- s
			return nil
		},
	}
	e := startServer(t, wake.Options{}, false, def)
	url := e.spawn("tooluser", "t1", nil)

	// A type that declares inbox schemas without the editor tools' refuses them.
	strict := `{"name":"strict","description":"d","inbox_schemas":{"note":{"type":"object"}}}`
	r := e.do(http.MethodPost, "/_electric/entity-types", strict)
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
	strictURL := e.spawn("strict", "s1", nil)
	r = e.do(http.MethodPost, entitiesPath+strictURL+"/send", `{"type":"editor_tools","payload":{"session":"x","version":1,"servers":[],"tools":[]}}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, "%s", r.Body)
	require.Contains(t, string(r.Body), "Unknown message type: editor_tools")

	offer := func(session string, version int64, closed bool, tools ...runtime.EditorTool) {
		t.Helper()
		o := runtime.EditorToolset{Session: session, Version: version, Closed: closed,
			Servers: []editortool.Server{{Name: "files", Status: editortool.StatusRunning}}, Tools: tools}
		if o.Tools == nil {
			o.Tools = []runtime.EditorTool{}
		}
		e.send(url, map[string]any{"type": editortool.OfferType, "key": editortool.OfferKey(session, version), "payload": o})
	}
	read := runtime.EditorTool{Server: "files", Name: "read", Description: "Read a file",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}
	write := runtime.EditorTool{Server: "files", Name: "write", InputSchema: json.RawMessage(`{"type":"object"}`)}

	offer("sess_a", 1, false, read)
	s := testwait.Recv(t, seen, "the first offer's wake")
	require.Equal(t, "sess_a", s.session)
	require.Len(t, s.sets, 1)
	require.Equal(t, "read", s.sets[0].Tools[0].Name)
	require.JSONEq(t, string(read.InputSchema), string(s.sets[0].Tools[0].InputSchema))

	offer("sess_b", 1, false, write)
	s = testwait.Recv(t, seen, "the second session's offer")
	require.Len(t, s.sets, 2)
	require.Equal(t, "sess_b", s.current.Session)

	// A newer offer of sess_a replaces its first.
	offer("sess_a", 2, false, write, read)
	s = testwait.Recv(t, seen, "sess_a's second offer")
	require.Equal(t, int64(2), s.current.Version)
	require.Len(t, s.current.Tools, 2)

	// A prompt from sess_b (the adapter's key names the session) calls sess_b's tool.
	e.send(url, map[string]any{"type": "composer_input", "key": "acp-sess_b-1-0a0b", "payload": map[string]any{"source": "go"}})
	s = testwait.Recv(t, seen, "the prompt's wake")
	require.Equal(t, "sess_b", s.session)
	require.Equal(t, "sess_b", s.current.Session)
	require.Equal(t, []string{
		"runtime: an editor tool call needs a session, a server and a tool",
		"runtime: editor tool arguments must be a JSON object",
		`runtime: call id "has space": at most 128 letters, digits, '-', '_', '.' or ':'`,
		"runtime: editor tool arguments: runtime: invalid JSON",
	}, s.callErrs)
	require.True(t, strings.HasPrefix(s.callID, "call_"), s.callID)
	// The handler sent what it saw before its run committed: wait for the commit.
	var calls []event
	testwait.Until(t, "the run with the call commits", func() bool {
		calls = ofType(e.events(url), editortool.CallEventType)
		return len(calls) > 0
	})
	require.Len(t, calls, 1)
	require.Equal(t, s.callID, calls[0].Key)
	require.Equal(t, "insert", calls[0].op())
	require.JSONEq(t, `{"session":"sess_b","server":"files","tool":"write","arguments":{"path":"/etc/hostname"}}`, string(calls[0].Value))
	require.Equal(t, []string{"calling files/write"}, texts(t, e.events(url)))

	// The result wakes the handler, which reads it back.
	res := runtime.EditorToolResult{CallID: s.callID, Session: "sess_b", Server: "files", Tool: "write",
		Content: []json.RawMessage{editortool.TextContent("written")}}
	e.send(url, map[string]any{"type": editortool.ResultType, "key": editortool.ResultKey(s.callID), "payload": res})
	s = testwait.Recv(t, seen, "the result's wake")
	require.NotNil(t, s.result)
	require.Equal(t, "sess_b", s.session)
	require.Equal(t, "written", s.result.Text())
	require.False(t, s.result.IsError)

	// sess_b closes: only sess_a is left, and a wake from no session gets it.
	offer("sess_b", 2, true)
	s = testwait.Recv(t, seen, "sess_b's closing offer")
	require.Len(t, s.sets, 1)
	require.Equal(t, "sess_a", s.sets[0].Session)
	require.Nil(t, s.current, "the closed session has no tools")
	e.send(url, map[string]any{"type": "composer_input", "key": "plain", "payload": map[string]any{"source": "hi"}})
	s = testwait.Recv(t, seen, "a prompt from no session")
	require.Empty(t, s.session)
	require.Equal(t, "sess_a", s.current.Session)
}

// TestEditorToolCallFromRemoteHandler: a handler outside the server calls an editor tool
// too; the server takes the editor_tool_call event although the type's state schemas do
// not name it (it is the runtime's own event, like a reply's).
func TestEditorToolCallFromRemoteHandler(t *testing.T) {
	e := startServer(t, wake.Options{}, false)
	def := runtime.EntityDefinition{Type: "remotetools", Description: "calls an editor tool from a runner",
		StateSchemas: map[string]json.RawMessage{"progress": json.RawMessage(`{"type":"object"}`)},
		Handler: func(ctx *runtime.Context) error {
			if _, ok := ctx.Wake.(runtime.InboxWake); !ok {
				return nil
			}
			_, err := ctx.CallEditorTool(runtime.EditorToolCall{Session: "sess_r", Server: "git", Tool: "status", ID: "call-remote-1"})
			return err
		}}
	startRemote(t, e, "runner", def)
	url := e.spawn("remotetools", "r1", nil)
	e.send(url, map[string]any{"payload": "go"})
	var calls []event
	testwait.Until(t, "the remote run's call commits", func() bool {
		calls = ofType(e.events(url), editortool.CallEventType)
		return len(calls) > 0
	}, 30*time.Second)
	require.Equal(t, "call-remote-1", calls[0].Key)
	require.JSONEq(t, `{"session":"sess_r","server":"git","tool":"status","arguments":{}}`, string(calls[0].Value))
	require.Empty(t, ofType(e.events(url), "error"))
}
