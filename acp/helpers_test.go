package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/entityd/entityd/acp"
	"github.com/entityd/entityd/examples/assistant"
	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/runtime"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// waitLimit bounds every wait for something the adapter or server must do; reaching it
// fails the test (it is a failure bound, not a stand-in for a signal).
const waitLimit = 20 * time.Second

// startServer is an in-process entityd hosting the demo assistant and any extra types.
func startServer(t testing.TB, extra ...runtime.EntityDefinition) *testserver.Server {
	t.Helper()
	defs := append([]runtime.EntityDefinition{assistant.Definition(t.TempDir())}, extra...)
	return testserver.Start(t, testserver.Options{Definitions: defs, QuietLogs: true})
}

// recorder is the editor side: it keeps what the adapter sends, per session.
type recorder struct {
	mu       sync.Mutex
	sessions map[sdk.SessionId]*sessionLog
}

type sessionLog struct {
	commands chan []sdk.AvailableCommand
	chunks   chan string

	mu         sync.Mutex
	transcript []line // user and agent message chunks, in the order received
}

// line is one message chunk of a transcript.
type line struct{ role, text string }

func newRecorder() *recorder { return &recorder{sessions: map[sdk.SessionId]*sessionLog{}} }

func (r *recorder) session(id sdk.SessionId) *sessionLog {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sessions[id]
	if s == nil {
		s = &sessionLog{commands: make(chan []sdk.AvailableCommand, 256), chunks: make(chan string, 4096)}
		r.sessions[id] = s
	}
	return s
}

func (r *recorder) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	s := r.session(n.SessionId)
	switch u := n.Update; {
	case u.AvailableCommandsUpdate != nil:
		s.commands <- u.AvailableCommandsUpdate.AvailableCommands
	case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
		s.record(line{"agent", u.AgentMessageChunk.Content.Text.Text})
		s.chunks <- u.AgentMessageChunk.Content.Text.Text
	case u.UserMessageChunk != nil && u.UserMessageChunk.Content.Text != nil:
		s.record(line{"user", u.UserMessageChunk.Content.Text.Text})
	}
	return nil
}

func (s *sessionLog) record(l line) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.transcript = append(s.transcript, l)
}

// takeTranscript returns the message chunks received so far and forgets them (after a
// request returned, every notification sent before its answer has been handled).
func (s *sessionLog) takeTranscript() []line {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.transcript
	s.transcript = nil
	return t
}

var errNotOffered = errors.New("not offered by the test client")

func (r *recorder) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, errNotOffered
}
func (r *recorder) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, errNotOffered
}
func (r *recorder) RequestPermission(context.Context, sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	return sdk.RequestPermissionResponse{}, errNotOffered
}
func (r *recorder) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, errNotOffered
}
func (r *recorder) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, errNotOffered
}
func (r *recorder) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, errNotOffered
}
func (r *recorder) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, errNotOffered
}
func (r *recorder) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, errNotOffered
}

// nextCommands is the session's next available_commands_update.
func (s *sessionLog) nextCommands(t testing.TB) []sdk.AvailableCommand {
	t.Helper()
	return testwait.Recv(t, s.commands, "an available_commands_update", waitLimit)
}

// reply drains the chunks received so far (after a prompt returned, all of its chunks
// have been handled: the SDK handles notifications received before a response first).
func (s *sessionLog) reply() []string {
	var out []string
	for {
		select {
		case c := <-s.chunks:
			out = append(out, c)
		default:
			return out
		}
	}
}

// editor is an SDK client connected to an in-process adapter through pipes.
type editor struct {
	*sdk.ClientSideConnection
	rec *recorder
}

// startAdapter serves an adapter for entity typ/id of srv and connects an editor to it;
// both end when the test does.
func startAdapter(t testing.TB, srv *testserver.Server, entity string, opts ...func(*acp.Options)) *editor {
	t.Helper()
	typ, id, err := acp.ParseEntity(entity)
	require.NoError(t, err)
	o := acp.Options{Server: srv.URL, EntityType: typ, EntityID: id}
	if tt, ok := t.(*testing.T); ok {
		o.Logger = zaptest.NewLogger(tt, zaptest.Level(zap.WarnLevel))
	}
	for _, f := range opts {
		f(&o)
	}
	agentIn, editorOut := io.Pipe()
	editorIn, agentOut := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- acp.Serve(context.Background(), o, agentIn, agentOut) }()
	rec := newRecorder()
	conn := sdk.NewClientSideConnection(rec, editorOut, editorIn)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		_ = editorOut.Close() // the editor closes the adapter's stdin: the adapter ends
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(waitLimit):
			t.Error("the adapter did not end after its stdin closed")
		}
		_ = agentOut.Close()
	})
	return &editor{ClientSideConnection: conn, rec: rec}
}

func (e *editor) initialize(t testing.TB) sdk.InitializeResponse {
	t.Helper()
	res, err := e.Initialize(ctxT(t), sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber})
	require.NoError(t, err)
	return res
}

// newSession opens a session; meta is session/new's _meta (nil for none).
func (e *editor) newSession(t testing.TB, meta map[string]any) (sdk.SessionId, *sessionLog) {
	t.Helper()
	res, err := e.NewSession(ctxT(t), sdk.NewSessionRequest{Cwd: "/work", McpServers: []sdk.McpServer{}, Meta: meta})
	require.NoError(t, err)
	return res.SessionId, e.rec.session(res.SessionId)
}

func (e *editor) prompt(t testing.TB, id sdk.SessionId, blocks ...sdk.ContentBlock) (sdk.StopReason, error) {
	t.Helper()
	res, err := e.Prompt(ctxT(t), sdk.PromptRequest{SessionId: id, Prompt: blocks})
	return res.StopReason, err
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

// call is one HTTP request to the server; it returns the status, headers and body.
func call(t testing.TB, method, url, body string) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, res.Header, data
}

func spawn(t testing.TB, srv *testserver.Server, entity string) {
	t.Helper()
	status, _, body := call(t, http.MethodPut, srv.URL+"/_electric/entities/"+entity, "{}")
	require.Equal(t, http.StatusCreated, status, string(body))
}

// streamEvent is one State Protocol event of an entity's main stream.
type streamEvent struct {
	Type    string          `json:"type"`
	Key     string          `json:"key"`
	Value   json.RawMessage `json:"value"`
	Headers struct {
		Operation string `json:"operation"`
	} `json:"headers"`
}

// mainStream reads an entity's whole main stream and its next offset.
func mainStream(t testing.TB, srv *testserver.Server, entity string) ([]streamEvent, string) {
	t.Helper()
	status, h, body := call(t, http.MethodGet, srv.URL+"/"+entity+"/main?offset=-1", "")
	require.Equal(t, http.StatusOK, status, string(body))
	var events []streamEvent
	require.NoError(t, json.Unmarshal(body, &events))
	return events, h.Get("Stream-Next-Offset")
}

// lastInboxPayload is the payload of the newest inbox message on the entity's stream.
func lastInboxPayload(t testing.TB, srv *testserver.Server, entity string) string {
	t.Helper()
	events, _ := mainStream(t, srv, entity)
	for i := len(events) - 1; i >= 0; i-- {
		if e := events[i]; e.Type == "inbox" && e.Headers.Operation == "insert" {
			var v struct {
				Payload json.RawMessage `json:"payload"`
			}
			require.NoError(t, json.Unmarshal(e.Value, &v))
			return string(v.Payload)
		}
	}
	t.Fatal("no inbox message on the stream")
	return ""
}

// cmd is an available command as the tests expect it.
type cmd struct{ name, description, hint string }

func commands(list []sdk.AvailableCommand) []cmd {
	out := make([]cmd, 0, len(list))
	for _, c := range list {
		x := cmd{name: c.Name, description: c.Description}
		if c.Input != nil && c.Input.Unstructured != nil {
			x.hint = c.Input.Unstructured.Hint
		}
		out = append(out, x)
	}
	return out
}

// requestError is err as a JSON-RPC error.
func requestError(t testing.TB, err error) *sdk.RequestError {
	t.Helper()
	require.Error(t, err)
	var re *sdk.RequestError
	require.True(t, errors.As(err, &re), "not a JSON-RPC error: %v", err)
	return re
}
