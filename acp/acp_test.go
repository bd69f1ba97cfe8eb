package acp_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/acp"
	"github.com/entityd/entityd/examples/assistant"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/runtime"
	"github.com/entityd/entityd/wire/composer"
)

var staticCommands = []cmd{
	{name: "pr-review", description: "Review a pull request", hint: "<number> [include_tests]"},
	{name: "quickstart", description: "Show how to get started"},
	{name: "search", description: "Search the workspace", hint: "<query>"},
}

func TestInitialize(t *testing.T) {
	srv := startServer(t)
	ed := startAdapter(t, srv, "assistant/i1")
	res := ed.initialize(t)
	require.Equal(t, sdk.ProtocolVersion(sdk.ProtocolVersionNumber), res.ProtocolVersion)
	require.NotNil(t, res.AgentInfo)
	require.Equal(t, "entityd", res.AgentInfo.Name)
	require.NotNil(t, res.AgentCapabilities.SessionCapabilities.Close)
	require.True(t, res.AgentCapabilities.LoadSession)
	require.NotNil(t, res.AgentCapabilities.SessionCapabilities.List)
	require.Nil(t, res.AgentCapabilities.SessionCapabilities.Resume)
	// A newer client version is answered with the newest the adapter speaks.
	res, err := ed.Initialize(ctxT(t), sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber + 5})
	require.NoError(t, err)
	require.Equal(t, sdk.ProtocolVersion(sdk.ProtocolVersionNumber), res.ProtocolVersion)
}

// TestCommandsFollowTheEntity: a snapshot right after session/new, then one per change
// of the entity's slash-command collection, pushed to every session of the entity.
func TestCommandsFollowTheEntity(t *testing.T) {
	srv := startServer(t)
	spawn(t, srv, "assistant/c1")
	ed := startAdapter(t, srv, "assistant/c1")
	ed.initialize(t)
	_, s1 := ed.newSession(t, nil)
	require.Equal(t, staticCommands, commands(s1.nextCommands(t)))
	_, s2 := ed.newSession(t, nil) // a second session of the same entity
	require.Equal(t, staticCommands, commands(s2.nextCommands(t)))

	base := srv.URL + "/_electric/entities/assistant/c1/slash-commands/search?owner=tester"
	status, _, body := call(t, http.MethodPut, base, `{"name":"search","description":"Search with the tester's index"}`)
	require.Equal(t, http.StatusOK, status, string(body))
	dynamic := []cmd{staticCommands[0], staticCommands[1], {name: "search", description: "Search with the tester's index"}}
	require.Equal(t, dynamic, commands(s1.nextCommands(t)))
	require.Equal(t, dynamic, commands(s2.nextCommands(t)))

	status, _, body = call(t, http.MethodDelete, base, "")
	require.Equal(t, http.StatusOK, status, string(body))
	require.Equal(t, staticCommands, commands(s1.nextCommands(t)))
	require.Equal(t, staticCommands, commands(s2.nextCommands(t)))

	// A new name shows up too; identical snapshots are not sent twice, so the next
	// update is exactly this one.
	status, _, body = call(t, http.MethodPut, srv.URL+"/_electric/entities/assistant/c1/slash-commands/deploy?owner=tester",
		`{"name":"deploy","arguments":[{"name":"env","type":"string","required":true},{"name":"dry_run","type":"boolean"}]}`)
	require.Equal(t, http.StatusOK, status, string(body))
	got := commands(s1.nextCommands(t))
	require.Equal(t, cmd{name: "deploy", hint: "<env> [dry_run]"}, got[0])
	require.Len(t, got, 4)
}

// TestPromptBecomesComposerInput: prompts become one composer_input each, stored exactly;
// the assistant's reply streams back as chunks and the turn ends with end_turn.
func TestPromptBecomesComposerInput(t *testing.T) {
	srv := startServer(t)
	spawn(t, srv, "assistant/p1")
	ed := startAdapter(t, srv, "assistant/p1")
	ed.initialize(t)
	id, s := ed.newSession(t, nil)
	s.nextCommands(t)

	stop, err := ed.prompt(t, id, sdk.TextBlock("👋 /pr-review 7"))
	require.NoError(t, err)
	require.Equal(t, sdk.StopReasonEndTurn, stop)
	reply := strings.Join(s.reply(), "")
	require.Contains(t, reply, `Command /pr-review with input "7"`)
	require.JSONEq(t, `{"source":"👋 /pr-review 7","nodes":[{"kind":"slash_command","start":3,"end":13,"raw":"/pr-review","name":"pr-review"}]}`,
		lastInboxPayload(t, srv, "assistant/p1"))

	// An unknown command is still sent, flagged.
	stop, err = ed.prompt(t, id, sdk.TextBlock("/nope please"))
	require.NoError(t, err)
	require.Equal(t, sdk.StopReasonEndTurn, stop)
	require.NotEmpty(t, s.reply())
	require.JSONEq(t, `{"source":"/nope please","nodes":[{"kind":"slash_command","start":0,"end":5,"raw":"/nope","name":"nope","unknown":true}]}`,
		lastInboxPayload(t, srv, "assistant/p1"))

	// A resource link becomes a file node over its text, appended after a space.
	stop, err = ed.prompt(t, id, sdk.TextBlock("🔎 /search in"), sdk.ResourceLinkBlock("main.go", "file:///work/src/main.go"),
		sdk.TextBlock("please"))
	require.NoError(t, err)
	require.Equal(t, sdk.StopReasonEndTurn, stop)
	require.Contains(t, strings.Join(s.reply(), ""), "references file /work/src/main.go")
	require.JSONEq(t, `{"source":"🔎 /search in @main.go please","nodes":[`+
		`{"kind":"slash_command","start":3,"end":10,"raw":"/search","name":"search"},`+
		`{"kind":"file","start":14,"end":22,"raw":"@main.go","path":"/work/src/main.go"}]}`,
		lastInboxPayload(t, srv, "assistant/p1"))

	// Plain text: no nodes at all.
	stop, err = ed.prompt(t, id, sdk.TextBlock("hello"))
	require.NoError(t, err)
	require.Equal(t, sdk.StopReasonEndTurn, stop)
	require.Contains(t, strings.Join(s.reply(), ""), `No command; text "hello".`)
	require.JSONEq(t, `{"source":"hello"}`, lastInboxPayload(t, srv, "assistant/p1"))
}

// TestSpawn: a missing entity is an error unless the session (or the adapter) asks for
// it to be spawned.
func TestSpawn(t *testing.T) {
	srv := startServer(t)
	ed := startAdapter(t, srv, "assistant/s1")
	ed.initialize(t)
	_, err := ed.NewSession(ctxT(t), sdk.NewSessionRequest{Cwd: "/work", McpServers: []sdk.McpServer{}})
	re := requestError(t, err)
	require.Equal(t, -32002, re.Code)
	require.Contains(t, re.Message, "/assistant/s1 does not exist")

	_, s := ed.newSession(t, map[string]any{"entityd": map[string]any{"spawn": true}})
	require.Equal(t, staticCommands, commands(s.nextCommands(t)))
	status, _, _ := call(t, http.MethodGet, srv.URL+"/_electric/entities/assistant/s1", "")
	require.Equal(t, http.StatusOK, status)

	// --spawn: the adapter spawns on any session/new.
	ed2 := startAdapter(t, srv, "assistant/s2", func(o *acp.Options) { o.Spawn = true })
	ed2.initialize(t)
	_, s2 := ed2.newSession(t, nil)
	require.Equal(t, staticCommands, commands(s2.nextCommands(t)))

	// An entity of an unknown type cannot be spawned: the server's refusal is the error.
	ed3 := startAdapter(t, srv, "nosuchtype/x", func(o *acp.Options) { o.Spawn = true })
	ed3.initialize(t)
	_, err = ed3.NewSession(ctxT(t), sdk.NewSessionRequest{Cwd: "/work", McpServers: []sdk.McpServer{}})
	re = requestError(t, err)
	require.Contains(t, re.Message, "Entity type not found")
}

// blocker is an entity type whose handler holds every message until released, so a
// prompt is reliably in flight when the test cancels it.
func blocker(started chan<- string, signals chan<- string, release <-chan struct{}) runtime.EntityDefinition {
	return runtime.EntityDefinition{Type: "blocker", Description: "holds messages until released",
		Handler: func(ctx *runtime.Context) error {
			switch w := ctx.Wake.(type) {
			case runtime.InboxWake:
				started <- w.Key
				select {
				case <-release:
				case <-ctx.Done():
				}
				return ctx.WriteText("released")
			case runtime.SignalWake:
				signals <- w.Signal
			}
			return nil
		}}
}

func TestCancel(t *testing.T) {
	started, signals, release := make(chan string, 8), make(chan string, 8), make(chan struct{})
	srv := startServer(t, blocker(started, signals, release))
	t.Cleanup(func() { close(release) }) // runs before the server stops
	spawn(t, srv, "blocker/b1")
	ed := startAdapter(t, srv, "blocker/b1")
	ed.initialize(t)
	id, s := ed.newSession(t, nil)
	s.nextCommands(t)

	type result struct {
		stop sdk.StopReason
		err  error
	}
	done := make(chan result, 1)
	go func() {
		res, err := ed.Prompt(ctxT(t), sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock("take your time")}})
		done <- result{res.StopReason, err}
	}()
	var key string
	select {
	case key = <-started: // the handler holds the message: the prompt is in flight
	case <-done:
		t.Fatal("the prompt ended before it was cancelled")
	}
	require.Regexp(t, `^acp-[0-9a-f]{24}-1-[0-9a-f]{8}$`, key) // the session's tag, its first prompt, a nonce

	require.NoError(t, ed.Cancel(ctxT(t), sdk.CancelNotification{SessionId: id}))
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, sdk.StopReasonCancelled, r.stop)

	// The entity got SIGINT (appended before the prompt answered).
	events, _ := mainStream(t, srv, "blocker/b1")
	var sigint bool
	for _, e := range events {
		if e.Type == "signal" && strings.Contains(string(e.Value), `"SIGINT"`) {
			sigint = true
		}
	}
	require.True(t, sigint, "no SIGINT signal event on the stream")
}

// TestRunEnd: a run given up on ends the turn with a message saying so (end_turn, never
// ACP's "refusal", which says the agent declined and makes editors rewind); a run that
// writes nothing still ends the turn.
func TestRunEnd(t *testing.T) {
	failing := runtime.EntityDefinition{Type: "failing", Description: "always fails",
		Handler: func(ctx *runtime.Context) error {
			if _, ok := ctx.Wake.(runtime.InboxWake); ok {
				return errors.New("this handler always fails")
			}
			return nil
		}}
	silent := runtime.EntityDefinition{Type: "silent", Description: "handles messages without writing anything",
		Handler: func(*runtime.Context) error { return nil }}
	srv := startServer(t, failing, silent)
	spawn(t, srv, "failing/f1")
	ed := startAdapter(t, srv, "failing/f1")
	ed.initialize(t)
	id, s := ed.newSession(t, nil)
	require.Empty(t, s.nextCommands(t))
	stop, err := ed.prompt(t, id, sdk.TextBlock("hi"))
	require.NoError(t, err)
	require.Equal(t, sdk.StopReasonEndTurn, stop)
	reply := strings.Join(s.reply(), "")
	require.Contains(t, reply, "entityd: the entity could not handle this message")
	require.Contains(t, reply, "this handler always fails", "the handler's error is named")

	// A run that writes nothing wakes no long-poll: the status check ends the turn.
	spawn(t, srv, "silent/q1")
	ed2 := startAdapter(t, srv, "silent/q1")
	ed2.initialize(t)
	id2, s2 := ed2.newSession(t, nil)
	s2.nextCommands(t)
	stop, err = ed2.prompt(t, id2, sdk.TextBlock("hi"))
	require.NoError(t, err)
	require.Equal(t, sdk.StopReasonEndTurn, stop)
	require.Empty(t, s2.reply())
}

// A session needs an absolute cwd and a prompt needs content: -32602 otherwise (the ACP
// schema's MUSTs), and nothing reaches the entity.
func TestSessionAndPromptParamsChecked(t *testing.T) {
	srv := startServer(t)
	spawn(t, srv, "assistant/p1")
	ed := startAdapter(t, srv, "assistant/p1")
	ed.initialize(t)
	for _, cwd := range []string{"", "work", "./here"} {
		_, err := ed.NewSession(ctxT(t), sdk.NewSessionRequest{Cwd: cwd, McpServers: []sdk.McpServer{}})
		require.EqualValues(t, -32602, requestError(t, err).Code, "cwd %q", cwd)
	}
	id, s := ed.newSession(t, nil)
	s.nextCommands(t)
	_, before := mainStream(t, srv, "assistant/p1")
	for _, blocks := range [][]sdk.ContentBlock{nil, {sdk.TextBlock("")}} {
		_, err := ed.prompt(t, id, blocks...)
		require.EqualValues(t, -32602, requestError(t, err).Code, "%v", blocks)
	}
	_, after := mainStream(t, srv, "assistant/p1")
	require.Equal(t, before, after, "nothing was sent")
}

// TestPromptRefused: what the server would refuse is refused before anything is sent;
// what the server refuses comes back with its message and details.
func TestPromptRefused(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{QuietLogs: true,
		Definitions: startServerDefs(t), Limits: inbox.Limits{Composer: composer.Limits{MaxSourceUnits: 200_000, MaxNodes: 5_000}}})
	spawn(t, srv, "assistant/r1")
	ed := startAdapter(t, srv, "assistant/r1")
	ed.initialize(t)
	id, s := ed.newSession(t, nil)
	s.nextCommands(t)
	_, before := mainStream(t, srv, "assistant/r1")

	// 100,001 UTF-16 units (the emoji counts two): over the limit.
	_, err := ed.prompt(t, id, sdk.TextBlock(strings.Repeat("a", 99_999)+"😀"))
	re := requestError(t, err)
	require.Equal(t, -32602, re.Code)
	require.Contains(t, re.Message, "/source must be at most 100000 characters (UTF-16 code units)")

	// 1,001 slash-command nodes.
	_, err = ed.prompt(t, id, sdk.TextBlock(strings.Repeat("/a ", 1_001)))
	re = requestError(t, err)
	require.Equal(t, -32602, re.Code)
	require.Contains(t, re.Message, "/nodes must contain at most 1000 nodes")

	// Content the adapter does not take.
	_, err = ed.prompt(t, id, sdk.TextBlock("look"), sdk.ImageBlock("aGk=", "image/png"))
	re = requestError(t, err)
	require.Equal(t, -32602, re.Code)
	require.Contains(t, re.Message, "image content is not supported")

	// Exactly at the limits is fine for the adapter (this server allows more).
	_, after := mainStream(t, srv, "assistant/r1")
	require.Equal(t, before, after, "a refused prompt appended to the stream")
	stop, err := ed.prompt(t, id, sdk.TextBlock(strings.Repeat("a", 99_998)+"😀"))
	require.NoError(t, err)
	require.Equal(t, sdk.StopReasonEndTurn, stop)
	s.reply()

	// A refusal of the server (409: the entity is stopped) keeps its message.
	status, _, body := call(t, http.MethodPost, srv.URL+"/_electric/entities/assistant/r1/signal", `{"signal":"SIGTERM"}`)
	require.Equal(t, http.StatusOK, status, string(body))
	_, err = ed.prompt(t, id, sdk.TextBlock("anyone there?"))
	re = requestError(t, err)
	require.Contains(t, re.Message, "entityd: ")
	data, _ := json.Marshal(re.Data)
	require.Contains(t, string(data), `"status":409`)
}

// TestServerRefusalDetails: a 422 with details from the server becomes invalid params
// carrying them.
func TestServerRefusalDetails(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{QuietLogs: true,
		Definitions: startServerDefs(t), Limits: inbox.Limits{Composer: composer.Limits{MaxSourceUnits: 10}}})
	spawn(t, srv, "assistant/d1")
	ed := startAdapter(t, srv, "assistant/d1")
	ed.initialize(t)
	id, s := ed.newSession(t, nil)
	s.nextCommands(t)
	_, err := ed.prompt(t, id, sdk.TextBlock("a prompt longer than ten units"))
	re := requestError(t, err)
	require.Equal(t, -32602, re.Code)
	require.Contains(t, re.Message, "/source must be at most 10 characters (UTF-16 code units)")
	data, _ := json.Marshal(re.Data)
	require.JSONEq(t, `{"status":422,"code":"SCHEMA_VALIDATION_FAILED","message":"Validation failed",`+
		`"details":[{"path":"/source","message":"must be at most 10 characters (UTF-16 code units)"}]}`, string(data))
}

func startServerDefs(t testing.TB) []runtime.EntityDefinition {
	return []runtime.EntityDefinition{assistant.Definition(t.TempDir())}
}

// TestSessions: prompts of unknown or closed sessions are refused; a session runs one
// prompt at a time is covered by TestCancel's blocker.
func TestSessions(t *testing.T) {
	srv := startServer(t)
	spawn(t, srv, "assistant/x1")
	ed := startAdapter(t, srv, "assistant/x1")
	ed.initialize(t)
	_, err := ed.prompt(t, "sess_nope", sdk.TextBlock("hi"))
	require.Equal(t, -32602, requestError(t, err).Code)

	id, s := ed.newSession(t, nil)
	require.Equal(t, sdk.SessionId("/assistant/x1"), id, "a session id is its entity's URL")
	s.nextCommands(t)
	_, err = ed.CloseSession(ctxT(t), sdk.CloseSessionRequest{SessionId: id})
	require.NoError(t, err)
	_, err = ed.prompt(t, id, sdk.TextBlock("hi"))
	require.Equal(t, -32602, requestError(t, err).Code)
	_, err = ed.CloseSession(ctxT(t), sdk.CloseSessionRequest{SessionId: id})
	require.Equal(t, -32002, requestError(t, err).Code, "closing it again: resource not found (already closed)")

	// The closed session's id (the entity's URL) is free again: the next session gets it,
	// and its commands, however late the closed one's goroutine ends.
	again, s := ed.newSession(t, nil)
	require.Equal(t, id, again)
	require.Equal(t, staticCommands, commands(s.nextCommands(t)))

	// A second session of the entity open at once gets an id of its own.
	other, s2 := ed.newSession(t, nil)
	require.Regexp(t, `^/assistant/x1#[0-9a-f]{8}$`, string(other))
	require.Equal(t, staticCommands, commands(s2.nextCommands(t)))

	// Methods the adapter does not offer.
	_, err = ed.SetSessionMode(ctxT(t), sdk.SetSessionModeRequest{SessionId: id, ModeId: "x"})
	require.Equal(t, -32601, requestError(t, err).Code)
	_, err = ed.ResumeSession(ctxT(t), sdk.ResumeSessionRequest{SessionId: id, Cwd: "/work"})
	require.Equal(t, -32601, requestError(t, err).Code)
}

// TestNewPromptReplacesRunning: the SDK cancels a session's prompt in flight when the
// next one arrives; the first answers cancelled (the entity gets SIGINT) and the second
// runs.
func TestNewPromptReplacesRunning(t *testing.T) {
	started, signals, release := make(chan string, 8), make(chan string, 8), make(chan struct{})
	srv := startServer(t, blocker(started, signals, release))
	released := false
	t.Cleanup(func() {
		if !released {
			close(release)
		}
	})
	spawn(t, srv, "blocker/b2")
	ed := startAdapter(t, srv, "blocker/b2")
	ed.initialize(t)
	id, s := ed.newSession(t, nil)
	s.nextCommands(t)

	first := make(chan sdk.StopReason, 1)
	go func() {
		stop, err := ed.prompt(t, id, sdk.TextBlock("one"))
		if err != nil {
			t.Error(err)
		}
		first <- stop
	}()
	<-started // the first message is held by the handler
	second := make(chan sdk.StopReason, 1)
	go func() {
		stop, err := ed.prompt(t, id, sdk.TextBlock("two"))
		if err != nil {
			t.Error(err)
		}
		second <- stop
	}()
	require.Equal(t, sdk.StopReasonCancelled, <-first)
	close(release)
	released = true
	require.Equal(t, sdk.StopReasonEndTurn, <-second)
}

// TestPrincipal: --principal is sent as Electric-Principal on every request (dev mode):
// the entity's messages come from that principal, and its refusals are the server's.
func TestPrincipal(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{QuietLogs: true, Definitions: startServerDefs(t), Admins: []string{"user:alice"}})
	ed := startAdapter(t, srv, "assistant/pp", func(o *acp.Options) { o.Principal = "user:alice"; o.Spawn = true })
	ed.initialize(t)
	id, s := ed.newSession(t, nil)
	s.nextCommands(t)
	stop, err := ed.prompt(t, id, sdk.TextBlock("hi"))
	require.NoError(t, err)
	require.Equal(t, sdk.StopReasonEndTurn, stop)
	events, _ := mainStream(t, srv, "assistant/pp")
	var from string
	for _, e := range events {
		if e.Type == "inbox" {
			var v struct {
				From string `json:"from"`
			}
			require.NoError(t, json.Unmarshal(e.Value, &v))
			from = v.From
		}
	}
	require.Equal(t, "/principal/user%3Aalice", from)

	// Bob has no grant on alice's entity: the server's 401 is ACP's "authentication required".
	bob := startAdapter(t, srv, "assistant/pp", func(o *acp.Options) { o.Principal = "user:bob" })
	bob.initialize(t)
	_, err = bob.NewSession(ctxT(t), sdk.NewSessionRequest{Cwd: "/work", McpServers: []sdk.McpServer{}})
	re := requestError(t, err)
	require.Equal(t, -32000, re.Code)
	require.Contains(t, re.Message, "not allowed")
}
