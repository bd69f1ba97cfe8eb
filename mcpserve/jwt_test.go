package mcpserve_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/internal/testserver"
)

// bearer adds a token to every request of an MCP client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// In jwt mode an MCP client authenticates with a bearer token on every request: the
// entity's creator lists its prompts and sends as itself; a principal without read is
// refused before any session exists, and so are no token and a token that does not verify.
func TestMCPInJWTMode(t *testing.T) {
	key := testserver.NewJWTKey(t)
	srv := testserver.Start(t, testserver.Options{API: api.Config{Auth: key.Auth}, QuietLogs: true})
	ada := key.Token(t, "user:ada")
	do := func(method, path, body, token string) (int, []byte) {
		t.Helper()
		headers := []string{"Accept", "application/json, text/event-stream"}
		if token != "" {
			headers = append(headers, "Authorization", "Bearer "+token)
		}
		return srv.Call(t, method, path, body, headers...)
	}
	status, body := do("POST", "/_electric/entity-types", chatType, ada)
	require.Equal(t, http.StatusCreated, status, string(body))
	status, body = do("PUT", "/_electric/entities/chat/one", `{}`, ada)
	require.Equal(t, http.StatusCreated, status, string(body))

	mc := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := mc.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/_electric/entities/chat/one/mcp",
		HTTPClient: &http.Client{Transport: bearer{ada}}, MaxRetries: -1}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	prompts, err := cs.ListPrompts(context.Background(), &mcp.ListPromptsParams{})
	require.NoError(t, err)
	var names []string
	for _, p := range prompts.Prompts {
		names = append(names, p.Name)
	}
	require.ElementsMatch(t, []string{"quickstart", "pr-review"}, names)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "send", Arguments: map[string]any{"prompt": "quickstart"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%+v", res.Content)

	status, body = do("GET", "/chat/one/main?offset=-1", "", ada)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, []string{"/principal/user%3Aada"}, testserver.InboxSenders(t, body))

	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	// a principal that may not read the entity (the reference's 401 for a refused check)
	status, body = do("POST", "/_electric/entities/chat/one/mcp", initialize, key.Token(t, "user:eve"))
	require.Equal(t, http.StatusUnauthorized, status)
	require.Contains(t, string(body), "not allowed to read /chat/one")
	status, _ = do("POST", "/_electric/entities/chat/one/mcp", initialize, "")
	require.Equal(t, http.StatusUnauthorized, status, "no token")
	status, _ = do("POST", "/_electric/entities/chat/one/mcp", initialize, "not-a-jwt")
	require.Equal(t, http.StatusUnauthorized, status, "a token that does not verify")
}
