package mcpserve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testserver"
)

const typedType = `{"name":"typed","description":"d","inbox_schemas":{
 "note":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
   "definitions":{"n":{"type":"integer"}},"properties":{"n":{"$ref":"#/definitions/n"}},"required":["n"],"additionalProperties":false},
 "ping":{"type":"string"},
 "send":{"type":"object"},
 "editor_tool_result":{"type":"object"},
 "bad name!":{"type":"object"}}}`

func toolNames(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	res, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{})
	require.NoError(t, err)
	out := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		out[tool.Name] = tool
	}
	return out
}

// The entity's inbox message types are tools: the schema is the input schema (kept as
// declared, or wrapped when it is not an object's), a call delivers one message of that
// type with the caller as sender, and a refused payload is the tool's error.
func TestMessageTypesAreTools(t *testing.T) {
	e := &env{t: t, srv: testserver.Start(t, testserver.Options{QuietLogs: true})}
	e.http("POST", "/_electric/entity-types", typedType, "", http.StatusCreated)
	e.http("PUT", "/_electric/entities/typed/one", `{}`, "", http.StatusCreated)
	mc := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	ctx := context.Background()
	cs, err := mc.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: e.srv.URL + "/_electric/entities/typed/one/mcp", MaxRetries: -1}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })

	tools := toolNames(t, cs)
	require.ElementsMatch(t, []string{"send", "note", "ping"}, keys(tools), "send stays the composer's, the ACP adapter's messages are no tools, a bad name is left out")
	schema, _ := json.Marshal(tools["note"].InputSchema)
	require.JSONEq(t, `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
	  "definitions":{"n":{"type":"integer"}},"properties":{"n":{"$ref":"#/definitions/n"}},"required":["n"],"additionalProperties":false}`, string(schema))
	schema, _ = json.Marshal(tools["ping"].InputSchema)
	require.JSONEq(t, `{"type":"object","required":["payload"],"properties":{"payload":{"type":"string"}}}`, string(schema))

	call := func(name string, args any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		require.NoError(t, err)
		return res
	}
	res := call("note", map[string]any{"n": 7})
	require.False(t, res.IsError, "%+v", res.Content)
	out, _ := json.Marshal(res.StructuredContent)
	require.Regexp(t, `^\{"offset":"\d{16}_\d{16}","txid":"[0-9a-f-]{36}"\}$`, string(out))
	require.False(t, call("ping", map[string]any{"payload": "hi"}).IsError)

	refused := call("note", map[string]any{})
	require.True(t, refused.IsError)
	require.Contains(t, refused.Content[0].(*mcp.TextContent).Text, "SCHEMA_VALIDATION_FAILED")
	require.True(t, call("ping", map[string]any{}).IsError)

	var events []struct {
		Type  string `json:"type"`
		Value struct {
			Type    string          `json:"message_type"`
			From    string          `json:"from"`
			Payload json.RawMessage `json:"payload"`
		} `json:"value"`
	}
	require.NoError(t, json.Unmarshal(e.http("GET", "/typed/one/main?offset=-1", "", "", http.StatusOK), &events))
	var got []string
	for _, ev := range events {
		if ev.Type == "inbox" {
			require.Equal(t, "/principal/system%3Adev-local", ev.Value.From)
			got = append(got, ev.Value.Type+" "+string(ev.Value.Payload))
		}
	}
	require.Equal(t, []string{`note {"n":7}`, `ping "hi"`}, got)

	// a message type added to the type is a tool for the next session
	e.http("PATCH", "/_electric/entity-types/typed/schemas", `{"inbox_schemas":{"later":{"type":"object"}}}`, "", http.StatusOK)
	cs2, err := mc.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: e.srv.URL + "/_electric/entities/typed/one/mcp", MaxRetries: -1}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs2.Close() })
	require.Contains(t, toolNames(t, cs2), "later")
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
