package mcpserve_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testserver"
)

// movingTransport sends every request to the server current holds, as a load balancer
// in front of replicas (or a restarted server on a new address) would.
type movingTransport struct {
	current atomic.Pointer[testserver.Server]
	who     string
}

func (m *movingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	u, _ := url.Parse(m.current.Load().URL)
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host, r.Host = u.Scheme, u.Host, u.Host
	if m.who != "" {
		r.Header.Set("Electric-Principal", m.who)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func sessionRows(t *testing.T, srv *testserver.Server) int {
	t.Helper()
	var n int
	require.NoError(t, srv.Pool.QueryRow(context.Background(), `SELECT count(*) FROM mcp_sessions`).Scan(&n))
	return n
}

// A session outlives the process that opened it: another replica on the same database
// serves it, and so does a server started after every one before it stopped — the same
// session ID, the same client, its notification stream resumed. Only the principal who
// opened it gets it back; once it is ended (DELETE) nobody does.
func TestSessionsOutliveTheProcess(t *testing.T) {
	a := testserver.Start(t, testserver.Options{QuietLogs: true})
	ea := &env{t: t, srv: a}
	ea.http("POST", "/_electric/entity-types", chatType, "", http.StatusCreated)
	ea.http("PUT", "/_electric/entities/chat/one", `{}`, "", http.StatusCreated)

	mt := &movingTransport{}
	mt.current.Store(a)
	changed := make(chan struct{}, 16)
	mc := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		}})
	ctx := context.Background()
	cs, err := mc.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: "http://entityd.invalid/_electric/entities/chat/one/mcp", HTTPClient: &http.Client{Transport: mt}}, nil)
	require.NoError(t, err)
	id := cs.ID()
	require.NotEmpty(t, id)
	require.Eventually(t, func() bool { return sessionRows(t, a) == 1 }, 5*time.Second, 10*time.Millisecond)

	// another replica serves the session it never opened
	b := testserver.Start(t, testserver.Options{QuietLogs: true, DBURL: a.DBURL})
	mt.current.Store(b)
	names := (&client{ClientSession: cs}).promptNames(t)
	require.ElementsMatch(t, []string{"quickstart", "pr-review"}, names)
	require.Equal(t, 1, b.MCP.Sessions())

	// every server stops; a new one serves it still, and its GET stream resumes there:
	// a command added afterwards reaches the client as list_changed
	c := testserver.Start(t, testserver.Options{QuietLogs: true, DBURL: a.DBURL})
	mt.current.Store(c)
	a.Stop()
	b.Stop()
	require.Equal(t, 1, sessionRows(t, c), "stopping keeps the session")
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send", Arguments: map[string]any{"text": "after the restart", "key": "r-1"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%+v", res.Content)
	require.Equal(t, id, cs.ID())
	ec := &env{t: t, srv: c}
	require.Len(t, ec.inbox(), 1)
	for len(changed) > 0 {
		<-changed
	}
	ec.http("PUT", "/_electric/entities/chat/one/slash-commands/deploy?owner=ops",
		`{"name":"deploy","description":"Ship it"}`, "", http.StatusOK)
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the resumed notification stream carried no list_changed")
	}

	// someone else presenting the ID gets the SDK's 404, not the session
	stranger := func(srv *testserver.Server) int {
		req, _ := http.NewRequest("POST", srv.URL+"/_electric/entities/chat/one/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("Electric-Principal", "user:mallory")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	d := testserver.Start(t, testserver.Options{QuietLogs: true, DBURL: a.DBURL})
	(&env{t: t, srv: d}).http("POST", "/_electric/entities/chat/one/grants",
		`{"subject_kind":"principal","subject_value":"user:mallory","permission":"read"}`, "", http.StatusCreated)
	require.Equal(t, http.StatusNotFound, stranger(d))
	require.Equal(t, 0, d.MCP.Sessions())

	// ended is ended: the row goes, and no server brings the session back
	require.NoError(t, cs.Close())
	require.Eventually(t, func() bool { return sessionRows(t, c) == 0 }, 5*time.Second, 10*time.Millisecond)
	mt.current.Store(d)
	_, err = cs.ListPrompts(ctx, &mcp.ListPromptsParams{})
	require.Error(t, err)
	require.Equal(t, 0, d.MCP.Sessions())
}

// A client's initialize parameters are kept only up to a bound: a session whose
// parameters are larger still works, but no row is written for it.
func TestOversizedInitializeIsNotKept(t *testing.T) {
	e := setup(t)
	mc := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1", Title: strings.Repeat("x", 70<<10)}, nil)
	cs, err := mc.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: e.srv.URL + "/_electric/entities/chat/one/mcp", MaxRetries: -1}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	require.Len(t, (&client{ClientSession: cs}).promptNames(t), 2)
	small := e.mustConnect("", "")
	require.Len(t, small.promptNames(t), 2)
	// the row is written just after the initialize's answer: wait for the small one's
	require.Eventually(t, func() bool { return sessionRows(t, e.srv) >= 1 }, 5*time.Second, 10*time.Millisecond)
	var ids []string
	rows, err := e.srv.Pool.Query(context.Background(), `SELECT id FROM mcp_sessions`)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{small.ID()}, ids, "only the session with small parameters is kept")
}
