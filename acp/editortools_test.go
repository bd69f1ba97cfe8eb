package acp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/entityd/entityd/acp"
	"github.com/entityd/entityd/internal/testbin"
	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/runtime"
	"github.com/entityd/entityd/wire/editortool"
)

// toolCaller is an entity type whose handler uses the editor's tools: a prompt
// "call <server> <tool> [json]" calls one (of the prompt's session, else of the only
// session offering tools) after a reply text saying so; a result is answered with a text
// describing it. Offers and results are handed to the test too.
func toolCaller(offers chan<- runtime.EditorToolset, results chan<- runtime.EditorToolResult) runtime.EntityDefinition {
	return runtime.EntityDefinition{Type: "toolcaller", Description: "calls its editor's MCP tools",
		Handler: func(ctx *runtime.Context) error {
			w, ok := ctx.Wake.(runtime.InboxWake)
			if !ok {
				return nil
			}
			switch w.Type {
			case editortool.OfferType:
				var o runtime.EditorToolset
				if err := json.Unmarshal(w.Payload, &o); err != nil {
					return err
				}
				offers <- o
				return nil
			case editortool.ResultType:
				r, ok := runtime.EditorToolResultOf(w)
				if !ok {
					return fmt.Errorf("not a result: %s", w.Payload)
				}
				results <- *r
				text := r.Text()
				if len(text) > 120 {
					text = text[:120] + "…"
				}
				if err := ctx.WriteText(fmt.Sprintf("result %s/%s is_error=%v truncated=%v: %s", r.Server, r.Tool, r.IsError, r.Truncated, text)); err != nil {
					return err
				}
				if text == "echo: chain" { // a result that asks for another call
					_, err := ctx.CallEditorTool(runtime.EditorToolCall{Session: r.Session, Server: "tt", Tool: "echo",
						Arguments: map[string]string{"text": "chained"}})
					return err
				}
				return nil
			}
			ci, ok := w.ComposerInput()
			if !ok {
				return nil
			}
			if rest, ok := strings.CutPrefix(ci.Source, "raw "); ok {
				// "raw <id> <value>": an editor_tool_call written as a remote handler might.
				id, value, _ := strings.Cut(rest, " ")
				return ctx.WriteEvent(editortool.CallEventType, id, "insert", json.RawMessage(value))
			}
			f := strings.SplitN(ci.Source, " ", 4)
			if len(f) < 3 || f[0] != "call" {
				return ctx.WriteText("say: call <server> <tool> [json]")
			}
			session := ctx.EditorSession()
			if session == "" {
				set, ok := ctx.EditorTools()
				if !ok {
					return ctx.WriteText("no editor session")
				}
				session = set.Session
			}
			call := runtime.EditorToolCall{Session: session, Server: f[1], Tool: f[2]}
			if len(f) == 4 {
				call.Arguments = json.RawMessage(f[3])
			}
			if err := ctx.WriteText("calling " + f[1] + "/" + f[2]); err != nil {
				return err
			}
			_, err := ctx.CallEditorTool(call)
			return err
		}}
}

// toolRecorder is the editor's side for these tests: the recorder, plus every update of
// a session in order ("chunk: …", "tool_call <id> <status> <title>", "update <id>
// <status>: <text>") and each tool update on a channel.
type toolRecorder struct {
	*recorder
	mu      sync.Mutex
	entries map[sdk.SessionId][]string
	updates map[sdk.SessionId]chan string
	answers []string // to permission requests, in order
}

func (r *toolRecorder) ch(id sdk.SessionId) chan string {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.updates[id]
	if c == nil {
		c = make(chan string, 1024)
		r.updates[id] = c
	}
	return c
}

func (r *toolRecorder) SessionUpdate(ctx context.Context, n sdk.SessionNotification) error {
	var entry string
	tool := false
	switch u := n.Update; {
	case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
		entry = "chunk: " + u.AgentMessageChunk.Content.Text.Text
	case u.ToolCall != nil:
		in, _ := json.Marshal(u.ToolCall.RawInput)
		entry, tool = fmt.Sprintf("tool_call %s %s %s %s %s", u.ToolCall.ToolCallId, u.ToolCall.Status, u.ToolCall.Title, u.ToolCall.Kind, in), true
	case u.ToolCallUpdate != nil:
		var texts []string
		for _, c := range u.ToolCallUpdate.Content {
			if c.Content != nil && c.Content.Content.Text != nil {
				texts = append(texts, c.Content.Content.Text.Text)
			}
		}
		status := ""
		if u.ToolCallUpdate.Status != nil {
			status = string(*u.ToolCallUpdate.Status)
		}
		entry, tool = fmt.Sprintf("update %s %s: %s", u.ToolCallUpdate.ToolCallId, status, strings.Join(texts, " | ")), true
	}
	if entry != "" {
		r.mu.Lock()
		r.entries[n.SessionId] = append(r.entries[n.SessionId], entry)
		r.mu.Unlock()
	}
	if tool {
		r.ch(n.SessionId) <- entry
	}
	return r.recorder.SessionUpdate(ctx, n)
}

// RequestPermission answers with the next answer the test queued ("" or none queued:
// refuse to answer), recording the request as an entry "permission <id> <title> <options>".
func (r *toolRecorder) RequestPermission(_ context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	var opts []string
	for _, o := range p.Options {
		opts = append(opts, string(o.OptionId)+"="+o.Name)
	}
	title := ""
	if p.ToolCall.Title != nil {
		title = *p.ToolCall.Title
	}
	r.mu.Lock()
	r.entries[p.SessionId] = append(r.entries[p.SessionId],
		fmt.Sprintf("permission %s %s [%s]", p.ToolCall.ToolCallId, title, strings.Join(opts, ", ")))
	var answer string
	if len(r.answers) > 0 {
		answer, r.answers = r.answers[0], r.answers[1:]
	}
	r.mu.Unlock()
	if answer == "" {
		return sdk.RequestPermissionResponse{}, errNotOffered
	}
	return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{
		Selected: &sdk.RequestPermissionOutcomeSelected{OptionId: sdk.PermissionOptionId(answer), Outcome: "selected"}}}, nil
}

// answer queues answers to permission requests.
func (r *toolRecorder) answer(options ...string) {
	r.mu.Lock()
	r.answers = append(r.answers, options...)
	r.mu.Unlock()
}

// log is the session's updates so far, in order.
func (r *toolRecorder) log(id sdk.SessionId) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.entries[id]...)
}

// nextTool is the session's next tool_call or tool_call_update.
func (r *toolRecorder) nextTool(t testing.TB, id sdk.SessionId) string {
	t.Helper()
	return testwait.Recv(t, r.ch(id), "a tool call update", waitLimit)
}

type toolEditor struct {
	*editor
	tools *toolRecorder
	done  chan error // Serve's return, once the editor closed the adapter's stdin
	close func()     // closes the adapter's stdin
}

// startToolAdapter is startAdapter with the toolRecorder as the editor.
func startToolAdapter(t *testing.T, srv *testserver.Server, entity string, opts ...func(*acp.Options)) *toolEditor {
	t.Helper()
	typ, id, err := acp.ParseEntity(entity)
	require.NoError(t, err)
	o := acp.Options{Server: srv.URL, EntityType: typ, EntityID: id, Spawn: true,
		Logger: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))}
	for _, f := range opts {
		f(&o)
	}
	agentIn, editorOut := io.Pipe()
	editorIn, agentOut := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- acp.Serve(context.Background(), o, agentIn, agentOut) }()
	rec := &toolRecorder{recorder: newRecorder(), entries: map[sdk.SessionId][]string{}, updates: map[sdk.SessionId]chan string{}}
	conn := sdk.NewClientSideConnection(rec, editorOut, editorIn)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	var once sync.Once
	te := &toolEditor{editor: &editor{ClientSideConnection: conn, rec: rec.recorder}, tools: rec, done: done,
		close: func() { once.Do(func() { _ = editorOut.Close() }) }}
	t.Cleanup(func() {
		te.close()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(waitLimit):
			t.Error("the adapter did not end after its stdin closed")
		}
		_ = agentOut.Close()
	})
	return te
}

// mcpServer is the test MCP server named name, writing its pids and calls to dir.
func mcpServer(t *testing.T, name, dir string, env ...sdk.EnvVariable) sdk.McpServer {
	bin := testbin.Build(t, "./testdata/mcpserver")
	return sdk.McpServer{Stdio: &sdk.McpServerStdio{Name: name, Command: bin, Args: []string{},
		Env: append([]sdk.EnvVariable{{Name: "MCP_TEST_DIR", Value: dir}, {Name: "MCP_TEST_NAME", Value: name}}, env...)}}
}

func (e *toolEditor) newToolSession(t *testing.T, cwd string, servers ...sdk.McpServer) sdk.SessionId {
	t.Helper()
	res, err := e.NewSession(ctxT(t), sdk.NewSessionRequest{Cwd: cwd, McpServers: append([]sdk.McpServer{}, servers...)})
	require.NoError(t, err)
	remember(t, res)
	return res.SessionId
}

// streamSessions maps a session's ACP id to the tag that names it on the entity's stream
// (session/new's _meta.entityd.stream_session): offers, calls and results carry the tag.
var streamSessions sync.Map

func remember(t *testing.T, res sdk.NewSessionResponse) {
	t.Helper()
	tag, _ := res.Meta["entityd"].(map[string]any)["stream_session"].(string)
	require.Regexp(t, `^[0-9a-f]{24}$`, tag, "session/new's _meta.entityd.stream_session")
	streamSessions.Store(res.SessionId, tag)
}

func tagOf(id sdk.SessionId) string {
	tag, _ := streamSessions.Load(id)
	s, _ := tag.(string)
	return s
}

// pidIn reads a pid file the test server wrote (it writes it first thing).
func pidIn(t *testing.T, path string) int {
	t.Helper()
	var pid int
	testwait.Until(t, "the pid file "+filepath.Base(path), func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	}, waitLimit)
	return pid
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
			return s[i+2] != 'Z'
		}
		return true
	}
	return syscall.Kill(pid, 0) == nil
}

func requireGone(t *testing.T, what string, pids ...int) {
	t.Helper()
	for _, pid := range pids {
		require.True(t, pid > 0)
		testwait.Until(t, fmt.Sprintf("%s (pid %d) ended", what, pid), func() bool { return !alive(pid) }, waitLimit)
	}
}

// callsRun is what the test server ran, in order.
func callsRun(t *testing.T, dir, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name+".calls"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	return strings.Fields(string(b))
}

// callID is the id of a "tool_call <id> …" entry.
func callID(t *testing.T, entry string) string {
	t.Helper()
	f := strings.Fields(entry)
	require.GreaterOrEqual(t, len(f), 2, entry)
	require.Equal(t, "tool_call", f[0], entry)
	return f[1]
}

// resultMessages are the editor_tool_result messages on the entity's stream, by key.
func resultMessages(t *testing.T, srv *testserver.Server, entity string) map[string]int {
	t.Helper()
	events, _ := mainStream(t, srv, entity)
	out := map[string]int{}
	for _, e := range events {
		if e.Type == "inbox" && e.Headers.Operation == "insert" && strings.Contains(string(e.Value), `"message_type":"editor_tool_result"`) {
			out[e.Key]++
		}
	}
	return out
}

// TestEditorToolsRoundTrip: the session's stdio MCP server starts, its tools reach the
// entity (a server that cannot start and an http one are reported, not fatal); a prompt
// whose run calls a tool shows it to the editor (pending → in_progress → completed or
// failed), runs it once on the server, hands the result to the handler, and the turn
// ends only after the handler's answer to the result; the tool list follows
// list_changed; session/close withdraws the tools and stops the server.
func TestEditorToolsRoundTrip(t *testing.T) {
	offers, results := make(chan runtime.EditorToolset, 64), make(chan runtime.EditorToolResult, 64)
	srv := startServer(t, toolCaller(offers, results))
	ed := startToolAdapter(t, srv, "toolcaller/r1")
	ed.initialize(t)
	dir, cwd := t.TempDir(), t.TempDir()
	id := ed.newToolSession(t, cwd,
		mcpServer(t, "tt", dir, sdk.EnvVariable{Name: "GREETING", Value: "hello"}),
		sdk.McpServer{Stdio: &sdk.McpServerStdio{Name: "broken", Command: filepath.Join(dir, "no-such-server"), Args: []string{}, Env: []sdk.EnvVariable{}}},
		sdk.McpServer{Http: &sdk.McpServerHttpInline{Name: "web", Url: "https://example.com/mcp", Headers: []sdk.HttpHeader{}}})

	o := testwait.Recv(t, offers, "the first offer", waitLimit)
	require.Equal(t, tagOf(id), o.Session)
	first := o.Version
	require.Greater(t, first, time.Now().Add(-time.Hour).UnixMicro(), "versions start at the clock")
	require.Len(t, o.Servers, 3)
	require.Equal(t, editortool.Server{Name: "tt", Status: editortool.StatusRunning}, o.Servers[0])
	require.Equal(t, "broken", o.Servers[1].Name)
	require.Equal(t, editortool.StatusFailed, o.Servers[1].Status)
	require.Contains(t, o.Servers[1].Error, "no-such-server")
	require.Equal(t, editortool.Server{Name: "web", Status: editortool.StatusRefused,
		Error: "an http MCP server; entityd acp runs stdio servers only"}, o.Servers[2])
	var names []string
	for _, tool := range o.Tools {
		require.Equal(t, "tt", tool.Server)
		names = append(names, tool.Name)
		if tool.Name == "echo" {
			require.Equal(t, "Echoes its text", tool.Description)
			var schema struct {
				Type       string                     `json:"type"`
				Properties map[string]json.RawMessage `json:"properties"`
			}
			require.NoError(t, json.Unmarshal(tool.InputSchema, &schema))
			require.Equal(t, "object", schema.Type)
			require.Contains(t, schema.Properties, "text")
			require.JSONEq(t, `{"readOnlyHint":true,"idempotentHint":false}`, string(tool.Annotations))
		}
	}
	require.ElementsMatch(t, []string{"add_tool", "big", "block", "crash", "echo", "env", "fail"}, names)

	// The editor was told about the two servers that did not start.
	reports := map[string]bool{}
	for len(reports) < 2 {
		c := testwait.Recv(t, ed.rec.session(id).chunks, "a report of a server that did not start", waitLimit)
		reports[c] = true
	}
	var report string
	for c := range reports {
		report += c
	}
	require.Contains(t, report, `entityd: MCP server "broken" did not start (`)
	require.Contains(t, report, `entityd: MCP server "web" did not start (an http MCP server; entityd acp runs stdio servers only); its tools are not offered.`)

	prompt := func(text string) []string {
		t.Helper()
		before := len(ed.tools.log(id))
		stop, err := ed.prompt(t, id, sdk.TextBlock(text))
		require.NoError(t, err)
		require.Equal(t, sdk.StopReasonEndTurn, stop)
		ed.rec.session(id).reply()
		return ed.tools.log(id)[before:]
	}

	// A tool that works: the reply text, then the call as the editor sees it, then the
	// handler's answer to the result — all within the turn, in that order.
	turn := prompt(`call tt echo {"text":"hi"}`)
	require.Len(t, turn, 5, "%q", turn)
	require.Equal(t, "chunk: calling tt/echo", turn[0])
	call := callID(t, turn[1])
	require.Equal(t, fmt.Sprintf(`tool_call %s pending tt/echo read {"text":"hi"}`, call), turn[1])
	require.Equal(t, "update "+call+" in_progress: ", turn[2])
	require.Equal(t, "update "+call+" completed: echo: hi", turn[3])
	require.Equal(t, "chunk: result tt/echo is_error=false truncated=false: echo: hi", turn[4])
	r := testwait.Recv(t, results, "the echo result", waitLimit)
	require.Equal(t, call, r.CallID)
	require.Equal(t, tagOf(id), r.Session)
	require.Equal(t, "echo: hi", r.Text())
	require.False(t, r.IsError)
	require.JSONEq(t, `[{"type":"text","text":"echo: hi"}]`, mustJSON(t, r.Content))

	// The handler's answer to a result calls again: the turn waits for that call too.
	turn = prompt(`call tt echo {"text":"chain"}`)
	require.Len(t, turn, 9, "%q", turn)
	require.Equal(t, "chunk: result tt/echo is_error=false truncated=false: echo: chain", turn[4])
	second := callID(t, turn[5])
	require.Equal(t, fmt.Sprintf(`tool_call %s pending tt/echo read {"text":"chained"}`, second), turn[5])
	require.Equal(t, "chunk: result tt/echo is_error=false truncated=false: echo: chained", turn[8])

	// A tool that fails, the environment and cwd the server got, a server the session
	// does not have, one that did not start.
	turn = prompt(`call tt fail {"message":"nope"}`)
	call = callID(t, turn[1])
	require.Equal(t, "update "+call+" failed: failed: nope", turn[3])
	require.Equal(t, "chunk: result tt/fail is_error=true truncated=false: failed: nope", turn[4])

	turn = prompt(`call tt env {"name":"GREETING"}`)
	require.Equal(t, "chunk: result tt/env is_error=false truncated=false: GREETING=hello cwd="+cwd, turn[len(turn)-1])

	turn = prompt(`call nosuch echo {}`)
	require.Equal(t, `chunk: result nosuch/echo is_error=true truncated=false: entityd acp: no MCP server "nosuch" in this editor session (it has: tt, broken, web)`,
		turn[len(turn)-1])
	turn = prompt(`call broken echo {}`)
	require.Contains(t, turn[len(turn)-1], `chunk: result broken/echo is_error=true truncated=false: entityd acp: MCP server "broken" is not running (failed: `)
	// A call the runtime would not write (arguments not an object), as another handler
	// might write it: the adapter answers it with an error.
	turn = prompt(`raw bad-1 {"session":"` + tagOf(id) + `","server":"tt","tool":"echo","arguments":[1,2]}`)
	require.Equal(t, "chunk: result tt/echo is_error=true truncated=false: entityd acp: the arguments of an editor_tool_call must be a JSON object",
		turn[len(turn)-1])
	require.Equal(t, "tool_call bad-1 pending tt/echo read [1,2]", turn[0])

	// A result over the limit is cut.
	turn = prompt(`call tt big {"bytes":300000}`)
	require.Contains(t, turn[len(turn)-1], "chunk: result tt/big is_error=false truncated=true: xxxx")
	r = resultFor(t, results, callID(t, turn[1]))
	require.True(t, r.Truncated)
	require.Len(t, r.Content, 2)
	size := 0
	for _, c := range r.Content {
		size += len(c)
	}
	require.LessOrEqual(t, size, 256<<10)
	require.Regexp(t, `\[entityd acp: the result was 3000\d\d bytes, over the limit of 262144; it was cut\]$`, r.Text())
	require.Greater(t, len(r.Text()), 250_000)

	// The tool list follows the server's list_changed.
	prompt(`call tt add_tool {"name":"late"}`)
	o = testwait.Recv(t, offers, "the offer after list_changed", waitLimit)
	require.Equal(t, first+1, o.Version)
	require.Contains(t, toolNames(o), "late")
	turn = prompt(`call tt late {"text":"x"}`)
	require.Equal(t, "chunk: result tt/late is_error=false truncated=false: late: x", turn[len(turn)-1])

	// Every call ran once on the server (the turn and the shared follower both saw each),
	// and each result was sent once.
	require.Equal(t, []string{"echo", "echo", "echo", "fail", "env", "big", "add_tool", "late"}, callsRun(t, dir, "tt"))
	sent := resultMessages(t, srv, "toolcaller/r1")
	require.Len(t, sent, 11)
	require.Contains(t, sent, editortool.ResultKey("bad-1"))
	for k, n := range sent {
		require.Equal(t, 1, n, k)
	}

	// session/close: the server stops and the entity hears the tools are gone.
	pid := pidIn(t, filepath.Join(dir, "tt.pid"))
	require.True(t, alive(pid))
	_, err := ed.CloseSession(ctxT(t), sdk.CloseSessionRequest{SessionId: id})
	require.NoError(t, err)
	o = testwait.Recv(t, offers, "the closing offer", waitLimit)
	require.True(t, o.Closed)
	require.Equal(t, first+2, o.Version)
	require.Empty(t, o.Tools)
	requireGone(t, "the MCP server", pid)
}

// resultFor is the result of call id (earlier results are skipped).
func resultFor(t *testing.T, results <-chan runtime.EditorToolResult, id string) runtime.EditorToolResult {
	t.Helper()
	for {
		r := testwait.Recv(t, results, "the result of "+id, waitLimit)
		if r.CallID == id {
			return r
		}
	}
}

func toolNames(o runtime.EditorToolset) []string {
	var out []string
	for _, t := range o.Tools {
		out = append(out, t.Name)
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// offerOf waits for the next offer of session id that satisfies ok.
func offerOf(t *testing.T, offers <-chan runtime.EditorToolset, id sdk.SessionId, what string, ok func(runtime.EditorToolset) bool) runtime.EditorToolset {
	t.Helper()
	for {
		o := testwait.Recv(t, offers, what, waitLimit)
		if o.Session == tagOf(id) && ok(o) {
			return o
		}
	}
}

func anyOffer(runtime.EditorToolset) bool { return true }

// TestEditorToolCancel: session/cancel during a call cancels it on the server; the
// editor sees it failed before the prompt answers "cancelled", and the handler still
// gets a result saying so (it does not wait forever).
func TestEditorToolCancel(t *testing.T) {
	offers, results := make(chan runtime.EditorToolset, 64), make(chan runtime.EditorToolResult, 64)
	srv := startServer(t, toolCaller(offers, results))
	ed := startToolAdapter(t, srv, "toolcaller/c1")
	ed.initialize(t)
	dir := t.TempDir()
	id := ed.newToolSession(t, t.TempDir(), mcpServer(t, "tt", dir))
	offerOf(t, offers, id, "the offer", anyOffer)

	done := make(chan sdk.StopReason, 1)
	go func() {
		stop, err := ed.prompt(t, id, sdk.TextBlock(`call tt block {}`))
		if err != nil {
			t.Error(err)
		}
		done <- stop
	}()
	call := callID(t, ed.tools.nextTool(t, id))
	require.Equal(t, "update "+call+" in_progress: ", ed.tools.nextTool(t, id))
	testwait.Until(t, "the server got the call", func() bool { return len(callsRun(t, dir, "tt")) == 1 }, waitLimit)
	require.NoError(t, ed.Cancel(ctxT(t), sdk.CancelNotification{SessionId: id}))
	require.Equal(t, sdk.StopReasonCancelled, testwait.Recv(t, done, "the cancelled prompt", waitLimit))
	log := ed.tools.log(id)
	require.Equal(t, "update "+call+" failed: entityd acp: cancelled: the editor cancelled the prompt", log[len(log)-1],
		"the call's end reached the editor before the prompt's answer")

	testwait.Until(t, "the server saw the cancellation", func() bool {
		_, err := os.Stat(filepath.Join(dir, "tt.cancelled"))
		return err == nil
	}, waitLimit)
	r := resultFor(t, results, call)
	require.True(t, r.IsError)
	require.Equal(t, "entityd acp: cancelled: the editor cancelled the prompt", r.Text())

	// The session goes on.
	stop, err := ed.prompt(t, id, sdk.TextBlock(`call tt echo {"text":"after"}`))
	require.NoError(t, err)
	require.Equal(t, sdk.StopReasonEndTurn, stop)
	require.Contains(t, strings.Join(ed.rec.session(id).reply(), ""), "result tt/echo is_error=false truncated=false: echo: after")
	require.Equal(t, []string{"block", "echo"}, callsRun(t, dir, "tt"))
}

// TestEditorToolCallBetweenTurns: a call the handler makes while no prompt of the
// session is in flight (here, for a message sent over HTTP) is run too: one follower of
// the entity's stream serves the adapter's sessions.
func TestEditorToolCallBetweenTurns(t *testing.T) {
	offers, results := make(chan runtime.EditorToolset, 64), make(chan runtime.EditorToolResult, 64)
	srv := startServer(t, toolCaller(offers, results))
	ed := startToolAdapter(t, srv, "toolcaller/w1")
	ed.initialize(t)
	dir := t.TempDir()
	id := ed.newToolSession(t, t.TempDir(), mcpServer(t, "tt", dir))
	offerOf(t, offers, id, "the offer", anyOffer)

	status, _, body := call(t, "POST", srv.URL+"/_electric/entities/toolcaller/w1/send",
		`{"type":"composer_input","key":"from-elsewhere","payload":{"source":"call tt echo {\"text\":\"idle\"}"}}`)
	require.Equal(t, 200, status, string(body))
	first := ed.tools.nextTool(t, id)
	c := callID(t, first)
	require.Equal(t, fmt.Sprintf(`tool_call %s pending tt/echo read {"text":"idle"}`, c), first)
	require.Equal(t, "update "+c+" in_progress: ", ed.tools.nextTool(t, id))
	require.Equal(t, "update "+c+" completed: echo: idle", ed.tools.nextTool(t, id))
	r := resultFor(t, results, c)
	require.Equal(t, "echo: idle", r.Text())
	require.Equal(t, []string{"echo"}, callsRun(t, dir, "tt"))
}

// TestEditorToolServersStop: no MCP server process (nor what it started) outlives its
// session: session/close stops one session's, the adapter's end stops the rest.
func TestEditorToolServersStop(t *testing.T) {
	offers, results := make(chan runtime.EditorToolset, 64), make(chan runtime.EditorToolResult, 64)
	srv := startServer(t, toolCaller(offers, results))
	ed := startToolAdapter(t, srv, "toolcaller/k1")
	ed.initialize(t)
	dir := t.TempDir()
	child := sdk.EnvVariable{Name: "MCP_TEST_CHILD", Value: "1"}
	a := ed.newToolSession(t, t.TempDir(), mcpServer(t, "a", dir, child))
	ed.newToolSession(t, t.TempDir(), mcpServer(t, "b", dir, child))
	for got := map[string]bool{}; len(got) < 2; { // both sessions' offers, in either order
		got[testwait.Recv(t, offers, "the sessions' offers", waitLimit).Session] = true
	}
	pids := map[string]int{}
	for _, f := range []string{"a.pid", "a.child.pid", "b.pid", "b.child.pid"} {
		pids[f] = pidIn(t, filepath.Join(dir, f))
		require.True(t, alive(pids[f]), f)
	}

	_, err := ed.CloseSession(ctxT(t), sdk.CloseSessionRequest{SessionId: a})
	require.NoError(t, err)
	requireGone(t, "session a's MCP server and its child", pids["a.pid"], pids["a.child.pid"])
	require.True(t, alive(pids["b.pid"]), "the other session's server runs on")

	ed.close() // the editor goes away
	require.NoError(t, testwait.Recv(t, ed.done, "the adapter's end", waitLimit))
	ed.done <- nil // for the cleanup's check
	require.False(t, alive(pids["b.pid"]), "the server was stopped (and reaped) before the adapter returned")
	requireGone(t, "session b's server's child (SIGKILLed, ends on its own time)", pids["b.child.pid"])
}

// TestEditorToolServerFailures: a server that never answers MCP is given up on after
// StartTimeout (offered as starting first, then as failed) and its process is stopped;
// servers over MaxServers are refused; a server that exits mid-call fails the call and
// is withdrawn from the offer.
func TestEditorToolServerFailures(t *testing.T) {
	offers, results := make(chan runtime.EditorToolset, 64), make(chan runtime.EditorToolResult, 64)
	srv := startServer(t, toolCaller(offers, results))
	ed := startToolAdapter(t, srv, "toolcaller/f1", func(o *acp.Options) {
		o.MCP = acp.MCPLimits{StartTimeout: 2 * time.Second, OfferWait: 200 * time.Millisecond, MaxServers: 1}
	})
	ed.initialize(t)
	dir := t.TempDir()
	slowPid := filepath.Join(dir, "slow.pid")
	slow := ed.newToolSession(t, t.TempDir(), sdk.McpServer{Stdio: &sdk.McpServerStdio{Name: "slow", Command: "sh",
		Args: []string{"-c", `echo $$ > "$PIDFILE"; exec sleep 60`}, Env: []sdk.EnvVariable{{Name: "PIDFILE", Value: slowPid}}}})
	o := offerOf(t, offers, slow, "the slow session's first offer", anyOffer)
	require.Equal(t, []editortool.Server{{Name: "slow", Status: editortool.StatusStarting}}, o.Servers)
	o = offerOf(t, offers, slow, "the slow server given up on", anyOffer)
	require.Equal(t, editortool.StatusFailed, o.Servers[0].Status)
	require.Contains(t, o.Servers[0].Error, "no answer within 2s")
	requireGone(t, "the server that never answered", pidIn(t, slowPid))
	require.Contains(t, testwait.Recv(t, ed.rec.session(slow).chunks, "the report", waitLimit), `entityd: MCP server "slow" did not start (no answer within 2s`)

	id := ed.newToolSession(t, t.TempDir(), mcpServer(t, "tt", dir), mcpServer(t, "extra", dir))
	o = offerOf(t, offers, id, "tt running", func(o runtime.EditorToolset) bool { return o.Servers[0].Status == editortool.StatusRunning })
	require.Equal(t, editortool.Server{Name: "extra", Status: editortool.StatusRefused, Error: "over the limit of 1 MCP servers per session"}, o.Servers[1])

	stop, err := ed.prompt(t, id, sdk.TextBlock(`call tt crash {}`))
	require.NoError(t, err)
	require.Equal(t, sdk.StopReasonEndTurn, stop)
	reply := strings.Join(ed.rec.session(id).reply(), "")
	require.Contains(t, reply, `result tt/crash is_error=true truncated=false: entityd acp: MCP server "tt" failed the call`)
	o = offerOf(t, offers, id, "tt withdrawn", func(o runtime.EditorToolset) bool { return o.Servers[0].Status == editortool.StatusExited })
	require.Empty(t, o.Tools)
	require.Equal(t, "its process ended", o.Servers[0].Error)
	// The report of the exit may have come with the reply; look in everything received.
	testwait.Until(t, "the exit reported to the editor", func() bool {
		for _, e := range ed.tools.log(id) {
			if strings.Contains(e, `entityd: MCP server "tt" exited (its process ended); its tools are withdrawn.`) {
				return true
			}
		}
		return false
	}, waitLimit)
}

// TestEditorToolServerEndsWithKilledAdapter: an adapter killed outright (SIGKILL, no
// cleanup) leaves no MCP server behind: the server's stdin closes (MCP's stdio
// shutdown) and, on Linux, the kernel sends it the parent-death signal.
func TestEditorToolServerEndsWithKilledAdapter(t *testing.T) {
	offers, results := make(chan runtime.EditorToolset, 64), make(chan runtime.EditorToolResult, 64)
	srv := startServer(t, toolCaller(offers, results))
	bin := testbin.Build(t, "github.com/entityd/entityd/cmd/server")
	cmd := exec.Command(bin, "acp", "--entity", "toolcaller/x1", "--server", srv.URL, "--spawn")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })

	rec := &toolRecorder{recorder: newRecorder(), entries: map[sdk.SessionId][]string{}, updates: map[sdk.SessionId]chan string{}}
	conn := sdk.NewClientSideConnection(rec, stdin, stdout)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	ed := &editor{ClientSideConnection: conn, rec: rec.recorder}
	ed.initialize(t)
	dir := t.TempDir()
	res, err := ed.NewSession(ctxT(t), sdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []sdk.McpServer{mcpServer(t, "k", dir)}})
	require.NoError(t, err)
	remember(t, res)
	offerOf(t, offers, res.SessionId, "the offer", anyOffer)
	pid := pidIn(t, filepath.Join(dir, "k.pid"))
	require.True(t, alive(pid))

	require.NoError(t, cmd.Process.Kill())
	testwait.Closed(t, exited, "the killed adapter", waitLimit)
	requireGone(t, "the killed adapter's MCP server", pid)
}

// TestAssistantUsesEditorTools: the demo assistant offers /tool while an editor session
// offers tools; /tool lists them, /tool <server>/<tool> {json} calls one and the reply
// quotes the result; the command goes when the session does.
func TestAssistantUsesEditorTools(t *testing.T) {
	srv := startServer(t)
	ed := startToolAdapter(t, srv, "assistant/demo")
	ed.initialize(t)
	other := ed.newToolSession(t, t.TempDir()) // no servers: it sees the command come and go
	require.Equal(t, staticCommands, commands(ed.rec.session(other).nextCommands(t)))
	dir := t.TempDir()
	id := ed.newToolSession(t, t.TempDir(), mcpServer(t, "tt", dir))
	withTool := func(list []sdk.AvailableCommand) bool {
		for _, c := range list {
			if c.Name == "tool" {
				return true
			}
		}
		return false
	}
	var cmds []sdk.AvailableCommand
	for cmds = ed.rec.session(id).nextCommands(t); !withTool(cmds); cmds = ed.rec.session(id).nextCommands(t) {
	}
	require.Contains(t, commands(cmds), cmd{name: "tool", description: "Call a tool of your editor's MCP servers (/tool alone lists them)",
		hint: "[tool] [arguments]"})

	stop, err := ed.prompt(t, id, sdk.TextBlock("/tool"))
	require.NoError(t, err)
	require.Equal(t, sdk.StopReasonEndTurn, stop)
	list := strings.Join(ed.rec.session(id).reply(), "")
	require.Contains(t, list, "Your editor offers 7 tool(s):")
	require.Contains(t, list, "\n- tt/echo — Echoes its text")

	stop, err = ed.prompt(t, id, sdk.TextBlock(`/tool echo {"text":"demo"}`))
	require.NoError(t, err)
	require.Equal(t, sdk.StopReasonEndTurn, stop)
	require.Equal(t, "Calling tt/echo in your editor…tt/echo returned:\necho: demo", strings.Join(ed.rec.session(id).reply(), ""))
	require.Equal(t, []string{"echo"}, callsRun(t, dir, "tt"))

	_, err = ed.CloseSession(ctxT(t), sdk.CloseSessionRequest{SessionId: id})
	require.NoError(t, err)
	for cmds = ed.rec.session(other).nextCommands(t); withTool(cmds); cmds = ed.rec.session(other).nextCommands(t) {
	}
	require.Equal(t, staticCommands, commands(cmds))
}

// TestEditorToolConfirm: with ConfirmTools the editor is asked before each call
// (session/request_permission, the call pending meanwhile); "allow always" holds for the
// tool, a rejection is the handler's error result, and a rejected call never runs.
func TestEditorToolConfirm(t *testing.T) {
	offers, results := make(chan runtime.EditorToolset, 64), make(chan runtime.EditorToolResult, 64)
	srv := startServer(t, toolCaller(offers, results))
	ed := startToolAdapter(t, srv, "toolcaller/p1", func(o *acp.Options) { o.ConfirmTools = true })
	ed.initialize(t)
	dir := t.TempDir()
	id := ed.newToolSession(t, t.TempDir(), mcpServer(t, "tt", dir))
	offerOf(t, offers, id, "the offer", anyOffer)
	prompt := func(text string) []string {
		t.Helper()
		before := len(ed.tools.log(id))
		stop, err := ed.prompt(t, id, sdk.TextBlock(text))
		require.NoError(t, err)
		require.Equal(t, sdk.StopReasonEndTurn, stop)
		ed.rec.session(id).reply()
		return ed.tools.log(id)[before:]
	}

	// The editor handles a request and the notifications before it concurrently, so the
	// permission entry and the tool_call entry come in either order; what follows the
	// answer comes after it.
	ed.tools.answer("allow_always")
	turn := prompt(`call tt echo {"text":"one"}`)
	c := callID(t, find(t, turn, "tool_call "))
	asked := index(turn, "permission ")
	require.Equal(t, fmt.Sprintf("permission %s tt/echo [allow_once=Allow, allow_always=Always allow tt/echo, "+
		"reject_once=Reject, reject_always=Always reject tt/echo]", c), turn[asked])
	require.Greater(t, index(turn, "update "+c+" in_progress"), asked)
	require.Equal(t, "chunk: result tt/echo is_error=false truncated=false: echo: one", turn[len(turn)-1])

	turn = prompt(`call tt echo {"text":"two"}`) // allowed always: not asked again
	require.Equal(t, -1, index(turn, "permission "), "%q", turn)
	require.Equal(t, "chunk: result tt/echo is_error=false truncated=false: echo: two", turn[len(turn)-1])

	ed.tools.answer("reject_once")
	turn = prompt(`call tt env {"name":"HOME"}`)
	c = callID(t, find(t, turn, "tool_call "))
	require.Greater(t, index(turn, "update "+c+" failed: entityd acp: the person at the editor rejected the call"), index(turn, "permission "+c+" tt/env ["))
	require.Equal(t, -1, index(turn, "update "+c+" in_progress"), "a rejected call does not start")
	require.Equal(t, "chunk: result tt/env is_error=true truncated=false: entityd acp: the person at the editor rejected the call", turn[len(turn)-1])

	turn = prompt(`call tt fail {"message":"x"}`) // no answer queued: the editor errs
	require.Contains(t, turn[len(turn)-1], "is_error=true truncated=false: entityd acp: the editor did not answer the permission request")

	require.Equal(t, []string{"echo", "echo"}, callsRun(t, dir, "tt"), "rejected calls never ran")
}

// index is the position of the first entry starting with prefix (-1: none).
func index(entries []string, prefix string) int {
	for i, e := range entries {
		if strings.HasPrefix(e, prefix) {
			return i
		}
	}
	return -1
}

// find is the first entry starting with prefix.
func find(t *testing.T, entries []string, prefix string) string {
	t.Helper()
	i := index(entries, prefix)
	require.GreaterOrEqual(t, i, 0, "no %q in %q", prefix, entries)
	return entries[i]
}
