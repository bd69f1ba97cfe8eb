package mcpserve_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// An editor puts prompts/get's messages into its model's conversation. The second
// message tells the model to deliver the command with the send tool: a scripted "model"
// that does what it says (and calls the tool twice, as a model retrying would) gets the
// command to the entity exactly once, as the composer_input a composer would send.
func TestPickedPromptReachesTheEntity(t *testing.T) {
	e := setup(t)
	c := e.mustConnect("", "2025-11-25")
	ctx := context.Background()
	got, err := c.GetPrompt(ctx, &mcp.GetPromptParams{Name: "pr-review", Arguments: map[string]string{"number": "7", "include_tests": "true"}})
	require.NoError(t, err)
	require.Len(t, got.Messages, 2)
	require.Equal(t, "/pr-review 7 true", got.Messages[0].Content.(*mcp.TextContent).Text)
	instruction := got.Messages[1].Content.(*mcp.TextContent).Text
	require.Contains(t, instruction, "send tool")
	require.Contains(t, instruction, "/chat/one")

	// the scripted model: the line that is a JSON object holds the tool's arguments
	var args map[string]any
	for line := range strings.Lines(instruction) {
		if strings.HasPrefix(line, "{") {
			require.NoError(t, json.Unmarshal([]byte(line), &args))
		}
	}
	require.NotNil(t, args, "the instruction gives the send tool's arguments")
	require.NotEmpty(t, args["key"], "with an idempotency key")
	for range 2 {
		res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "send", Arguments: args})
		require.NoError(t, err)
		require.False(t, res.IsError, "%+v", res.Content)
	}
	msgs := e.inbox()
	require.Len(t, msgs, 1, "delivered once")
	require.Equal(t, "composer_input", msgs[0].Value.MessageType)
	require.JSONEq(t, `{"source":"/pr-review 7 true","nodes":[
	  {"kind":"slash_command","start":0,"end":10,"raw":"/pr-review","name":"pr-review"}]}`, string(msgs[0].Value.Payload))

	// each prompts/get is a new invocation: a new key
	again, err := c.GetPrompt(ctx, &mcp.GetPromptParams{Name: "pr-review", Arguments: map[string]string{"number": "7"}})
	require.NoError(t, err)
	require.NotEqual(t, instruction, again.Messages[1].Content.(*mcp.TextContent).Text)
}
