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
