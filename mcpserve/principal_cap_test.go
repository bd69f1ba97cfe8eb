package mcpserve_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/mcpserve"
)

// One principal cannot hold every MCP session: at its cap its next session is refused
// (429 TOO_MANY_SESSIONS, Retry-After) while another principal still opens one, and a
// session it ends (DELETE) makes room at once.
func TestMCPSessionsArePerPrincipal(t *testing.T) {
	const limit = 3
	key := testserver.NewJWTKey(t)
	srv := testserver.Start(t, testserver.Options{API: api.Config{Auth: key.Auth}, QuietLogs: true,
		MCP: mcpserve.Options{MaxSessionsPerPrincipal: limit}})
	ada, bob := key.Token(t, "user:ada"), key.Token(t, "user:bob")
	call := func(method, path, body, token string) {
		t.Helper()
		status, out := srv.Call(t, method, path, body, "Authorization", "Bearer "+token)
		require.Less(t, status, 300, "%s %s: %s", method, path, out)
	}
	call("POST", "/_electric/entity-types", chatType, ada)
	call("PUT", "/_electric/entities/chat/one", `{}`, ada)
	call("POST", "/_electric/entities/chat/one/grants", `{"subject_kind":"principal","subject_value":"user:bob","permission":"read"}`, ada)

	connect := func(token string) (*mcp.ClientSession, error) {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: srv.URL + "/_electric/entities/chat/one/mcp",
				HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1}, nil)
		if err == nil {
			t.Cleanup(func() { _ = cs.Close() })
		}
		return cs, err
	}
	initialize := func(token string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest("POST", srv.URL+"/_electric/entities/chat/one/mcp", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var b strings.Builder
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		b.Write(buf[:n])
		resp.Body.Close()
		return resp, b.String()
	}

	var adas []*mcp.ClientSession
	for range limit {
		cs, err := connect(ada)
		require.NoError(t, err)
		adas = append(adas, cs)
	}
	_, err := connect(ada)
	require.Error(t, err, "ada's session beyond her cap")
	resp, body := initialize(ada)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, body)
	require.Contains(t, body, "TOO_MANY_SESSIONS")
	require.NotEmpty(t, resp.Header.Get("Retry-After"))

	// bob is not locked out by ada
	_, err = connect(bob)
	require.NoError(t, err, "another principal refused while ada is at her cap")

	// ending a session (the client's DELETE) frees its place at once
	require.NoError(t, adas[0].Close())
	_, err = connect(ada)
	require.NoError(t, err, "ada refused after ending one of her sessions")
	_, err = connect(ada)
	require.Error(t, err, "ada over her cap again")
	require.Equal(t, limit, srv.MCP.SessionsOf("user:ada"))
	require.Equal(t, 1, srv.MCP.SessionsOf("user:bob"))
}

// A session's place is given back however the session ends without a DELETE: the idle
// timeout, the entity's MCP server being dropped (its collection stream deleted), the
// service stopping.
func TestMCPSessionPlacesAreGivenBack(t *testing.T) {
	const limit = 2
	srv := testserver.Start(t, testserver.Options{QuietLogs: true,
		MCP: mcpserve.Options{MaxSessionsPerPrincipal: limit, SessionTimeout: time.Second}})
	e := &env{t: t, srv: srv}
	e.http("POST", "/_electric/entity-types", chatType, "", http.StatusCreated)
	e.http("PUT", "/_electric/entities/chat/one", `{}`, "", http.StatusCreated)
	e.http("PUT", "/_electric/entities/chat/two", `{}`, "", http.StatusCreated)
	const dev = "system:dev-local"
	open := func(entity string) {
		t.Helper()
		for range limit {
			_, err := e.connectTo(entity, "", "")
			require.NoError(t, err)
		}
		_, err := e.connectTo(entity, "", "")
		require.Error(t, err, "over the cap")
		require.Equal(t, limit, srv.MCP.SessionsOf(dev))
	}
	given := func(why string) {
		t.Helper()
		testwait.Until(t, fmt.Sprintf("the places to be given back after %s", why), func() bool { return srv.MCP.SessionsOf(dev) == 0 }, 10*time.Second)
	}

	// idle: the sessions make no request after initializing
	open("one")
	given("the idle timeout")

	// dropped: deleting the entity's collection stream ends its MCP server and sessions
	open("one")
	require.NoError(t, srv.Streams.Delete(context.Background(), entitypath.Collection("/chat/one"), nil))
	given("the entity's server was dropped")

	// stopped: Stop returns once every place is back
	open("two")
	srv.MCP.Stop(context.Background())
	require.Zero(t, srv.MCP.SessionsOf(dev), "places held after Stop")
}
