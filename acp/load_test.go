package acp_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/acp"
	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/streamdb"
)

// loadSession sends session/load for id with an absolute cwd and no MCP servers.
func (e *editor) loadSession(t testing.TB, id sdk.SessionId) error {
	t.Helper()
	_, err := e.LoadSession(ctxT(t), sdk.LoadSessionRequest{SessionId: id, Cwd: "/work", McpServers: []sdk.McpServer{}})
	return err
}

// TestLoadReplaysHistory: a session's id is its entity's URL; an editor that comes back
// later (another adapter process, started for another entity even) loads it and gets
// the conversation replayed before the answer — each message as a user_message_chunk,
// each reply as one agent_message_chunk with the text the live prompt streamed — then
// the available commands; prompts go on as on a new session.
func TestLoadReplaysHistory(t *testing.T) {
	srv := startServer(t)
	spawn(t, srv, "assistant/h1")
	ed := startAdapter(t, srv, "assistant/h1")
	ed.initialize(t)
	id, s := ed.newSession(t, nil)
	require.Equal(t, sdk.SessionId("/assistant/h1"), id)
	s.nextCommands(t)
	var want []line
	for _, text := range []string{"👋 /pr-review 7", "hello"} {
		stop, err := ed.prompt(t, id, sdk.TextBlock(text))
		require.NoError(t, err)
		require.Equal(t, sdk.StopReasonEndTurn, stop)
		reply := strings.Join(s.reply(), "")
		require.NotEmpty(t, reply)
		want = append(want, line{"user", text}, line{"agent", reply})
	}
	require.Contains(t, want[1].text, `Command /pr-review with input "7"`)

	// A second session of the entity in the same adapter gets an id of its own.
	id2, s2 := ed.newSession(t, nil)
	require.Regexp(t, `^/assistant/h1#[0-9a-f]{8}$`, string(id2))
	s2.nextCommands(t)

	later := startAdapter(t, srv, "assistant/elsewhere") // its own entity need not exist to load another
	later.initialize(t)
	require.NoError(t, later.loadSession(t, id))
	ls := later.rec.session(id)
	require.Equal(t, want, ls.takeTranscript(), "the replay, all of it before the answer, in order")
	require.Equal(t, staticCommands, commands(ls.nextCommands(t)))
	ls.reply() // the replayed chunks, already compared

	stop, err := later.prompt(t, id, sdk.TextBlock("/quickstart now"))
	require.NoError(t, err)
	require.Equal(t, sdk.StopReasonEndTurn, stop)
	require.Contains(t, strings.Join(ls.reply(), ""), `Command /quickstart with input "now"`)
	ls.takeTranscript() // the live reply, just read
	require.JSONEq(t, `{"source":"/quickstart now","nodes":[{"kind":"slash_command","start":0,"end":11,"raw":"/quickstart","name":"quickstart"}]}`,
		lastInboxPayload(t, srv, "assistant/h1"), "the loaded session's prompt reached the entity it names")

	// A suffixed id names the same entity: the same history, now with the third exchange.
	require.NoError(t, later.loadSession(t, id2))
	got := later.rec.session(id2).takeTranscript()
	require.Len(t, got, 6)
	require.Equal(t, want, got[:4])
	require.Equal(t, line{"user", "/quickstart now"}, got[4])

	// Loading a session that is open replays again and leaves it open.
	require.NoError(t, later.loadSession(t, id))
	require.Len(t, ls.takeTranscript(), 6)
	ls.reply()
	stop, err = later.prompt(t, id, sdk.TextBlock("still here?"))
	require.NoError(t, err)
	require.Equal(t, sdk.StopReasonEndTurn, stop)
	require.Contains(t, strings.Join(ls.reply(), ""), `text "still here?"`)
	ls.takeTranscript()

	// Closed, it can be loaded again (its id is free), and prompted.
	_, err = later.CloseSession(ctxT(t), sdk.CloseSessionRequest{SessionId: id})
	require.NoError(t, err)
	require.NoError(t, later.loadSession(t, id))
	require.Len(t, ls.takeTranscript(), 8)
}

// TestLoadReadsPages: the history is read page by page (here pages of 512 bytes, so a
// dozen exchanges take many), and replayed whole and in order.
func TestLoadReadsPages(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{QuietLogs: true, Definitions: startServerDefs(t),
		Streams: streamdb.Options{MaxReadBytes: 512}})
	spawn(t, srv, "assistant/pg")
	ed := startAdapter(t, srv, "assistant/pg")
	ed.initialize(t)
	id, s := ed.newSession(t, nil)
	s.nextCommands(t)
	var want []line
	for i := range 12 {
		text := fmt.Sprintf("message %d /search q%d", i, i)
		_, err := ed.prompt(t, id, sdk.TextBlock(text))
		require.NoError(t, err)
		want = append(want, line{"user", text}, line{"agent", strings.Join(s.reply(), "")})
	}
	require.Greater(t, catchUpPages(t, srv, "assistant/pg"), 12, "the history spans many pages")

	later := startAdapter(t, srv, "assistant/pg")
	later.initialize(t)
	require.NoError(t, later.loadSession(t, id))
	require.Equal(t, want, later.rec.session(id).takeTranscript())
}

// TestLoadRefusals: bad params are -32602; an id that names no entity, an entity that
// does not exist, and one the caller may not read are -32002 ("resource not found"),
// and the adapter goes on.
func TestLoadRefusals(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{QuietLogs: true, Definitions: startServerDefs(t), Admins: []string{"user:alice"}})
	status, body := srv.Call(t, http.MethodPut, "/_electric/entities/assistant/secret", "{}", "Electric-Principal", "user:alice")
	require.Equal(t, http.StatusCreated, status, string(body))

	bob := startAdapter(t, srv, "assistant/bob1", func(o *acp.Options) { o.Principal = "user:bob" })
	bob.initialize(t)
	for _, cwd := range []string{"", "work", "./here"} {
		_, err := bob.LoadSession(ctxT(t), sdk.LoadSessionRequest{SessionId: "/assistant/secret", Cwd: cwd, McpServers: []sdk.McpServer{}})
		require.EqualValues(t, -32602, requestError(t, err).Code, "cwd %q", cwd)
	}
	for id, msg := range map[sdk.SessionId]string{
		"sess_17d0aa":         "a session of entityd is the URL of an entity",
		"assistant/secret":    "a session of entityd is the URL of an entity",
		"/assistant":          "a session of entityd is the URL of an entity",
		"/assistant/nope":     "Entity not found",
		"/assistant/nope#abc": "Entity not found",
		"/assistant/secret":   "not allowed",
	} {
		re := requestError(t, bob.loadSession(t, id))
		require.Equal(t, -32002, re.Code, id)
		require.Contains(t, re.Message, msg, id)
		require.Contains(t, re.Message, string(id), id)
	}
	require.Empty(t, bob.rec.session("/assistant/secret").takeTranscript(), "nothing of the entity was sent")

	// The adapter still serves: alice loads her entity.
	alice := startAdapter(t, srv, "assistant/secret", func(o *acp.Options) { o.Principal = "user:alice" })
	alice.initialize(t)
	require.NoError(t, alice.loadSession(t, "/assistant/secret"))
	require.Equal(t, staticCommands, commands(alice.rec.session("/assistant/secret").nextCommands(t)))
}

// TestListSessions: the entities of the adapter's type the caller may read, each with
// its URL as id and title, the cwd the client filters by, its last change and status,
// in pages of 100 joined by the cursor.
func TestListSessions(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{QuietLogs: true, Definitions: startServerDefs(t), Admins: []string{"user:alice"}})
	// A type without a handler: 105 entities spawn without waking anything.
	status, body := srv.Call(t, http.MethodPost, "/_electric/entity-types", `{"name":"note","description":"notes"}`, "Electric-Principal", "user:alice")
	require.Equal(t, http.StatusCreated, status, string(body))
	var urls []string
	for i := range 105 {
		url := fmt.Sprintf("/note/n%03d", i)
		status, body := srv.Call(t, http.MethodPut, "/_electric/entities"+url, "{}", "Electric-Principal", "user:alice")
		require.Equal(t, http.StatusCreated, status, string(body))
		urls = append(urls, url)
	}
	status, body = srv.Call(t, http.MethodPut, "/_electric/entities/assistant/other", "{}", "Electric-Principal", "user:alice")
	require.Equal(t, http.StatusCreated, status, string(body))

	ed := startAdapter(t, srv, "note/n000", func(o *acp.Options) { o.Principal = "user:alice" })
	ed.initialize(t)
	cwd := "/home/ada/project"
	first, err := ed.ListSessions(ctxT(t), sdk.ListSessionsRequest{Cwd: &cwd})
	require.NoError(t, err)
	require.Len(t, first.Sessions, 100)
	require.NotNil(t, first.NextCursor)
	s0 := first.Sessions[0]
	require.Equal(t, sdk.SessionId("/note/n000"), s0.SessionId)
	require.Equal(t, cwd, s0.Cwd)
	require.Equal(t, "/note/n000", *s0.Title)
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, *s0.UpdatedAt)
	require.Equal(t, map[string]any{"entityd": map[string]any{"status": "idle"}}, s0.Meta)

	second, err := ed.ListSessions(ctxT(t), sdk.ListSessionsRequest{Cursor: first.NextCursor})
	require.NoError(t, err)
	require.Len(t, second.Sessions, 5)
	require.Nil(t, second.NextCursor, "the last page")
	var got []string
	for _, s := range append(first.Sessions, second.Sessions...) {
		got = append(got, string(s.SessionId))
		require.True(t, strings.HasPrefix(s.Cwd, "/"), "without a filter, the adapter's working directory")
	}
	require.Equal(t, urls, got, "every note once, in the server's order; no assistant")

	// A listed session loads.
	require.NoError(t, ed.loadSession(t, second.Sessions[4].SessionId))

	// Bob may read none of alice's notes.
	bob := startAdapter(t, srv, "note/n000", func(o *acp.Options) { o.Principal = "user:bob" })
	bob.initialize(t)
	res, err := bob.ListSessions(ctxT(t), sdk.ListSessionsRequest{})
	require.NoError(t, err)
	require.Empty(t, res.Sessions)
	require.Nil(t, res.NextCursor)

	// A relative cwd filter and a cursor the server does not know are invalid params.
	rel := "project"
	_, err = ed.ListSessions(ctxT(t), sdk.ListSessionsRequest{Cwd: &rel})
	require.Equal(t, -32602, requestError(t, err).Code)
	gone := "/note/never-was"
	_, err = ed.ListSessions(ctxT(t), sdk.ListSessionsRequest{Cursor: &gone})
	require.Equal(t, -32602, requestError(t, err).Code)
}

// catchUpPages is how many catch-up reads it takes to read an entity's main stream.
func catchUpPages(t testing.TB, srv *testserver.Server, entity string) int {
	t.Helper()
	offset := "-1"
	for n := 1; ; n++ {
		status, h, body := call(t, http.MethodGet, srv.URL+"/"+entity+"/main?offset="+offset, "")
		require.Equal(t, http.StatusOK, status, string(body))
		if h.Get("Stream-Up-To-Date") == "true" {
			return n
		}
		offset = h.Get("Stream-Next-Offset")
	}
}

// TestLoadEndedEntity: a stopped entity's history can still be loaded and read; a prompt
// to it is the server's refusal (409, as -32600), not a hang.
func TestLoadEndedEntity(t *testing.T) {
	srv := startServer(t)
	spawn(t, srv, "assistant/old")
	ed := startAdapter(t, srv, "assistant/old")
	ed.initialize(t)
	id, s := ed.newSession(t, nil)
	s.nextCommands(t)
	_, err := ed.prompt(t, id, sdk.TextBlock("remember me"))
	require.NoError(t, err)
	reply := strings.Join(s.reply(), "")
	status, _, body := call(t, http.MethodPost, srv.URL+"/_electric/entities/assistant/old/signal", `{"signal":"SIGTERM"}`)
	require.Equal(t, http.StatusOK, status, string(body))

	later := startAdapter(t, srv, "assistant/old")
	later.initialize(t)
	require.NoError(t, later.loadSession(t, id))
	require.Equal(t, []line{{"user", "remember me"}, {"agent", reply}}, later.rec.session(id).takeTranscript())
	_, err = later.prompt(t, id, sdk.TextBlock("still there?"))
	re := requestError(t, err)
	require.Equal(t, -32600, re.Code)
	require.Contains(t, re.Message, "entityd: ")
}
