package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/wire"
	"github.com/entityd/entityd/wire/composer"
	"github.com/entityd/entityd/wire/editortool"
)

// Message tools: every inbox message type the entity declares — its type's
// inbox_schemas, else the ones it was spawned with, as POST …/send checks them — is also
// a tool of the same name, whose input schema is the message's schema, so an editor's
// model can send the entity's typed messages (not only composer_input through send). A
// call delivers one message of that type, with the arguments as its payload, and answers
// {txid, offset} as send does; a payload the schema refuses is the tool's error, with
// the validator's details. A schema that does not describe an object is wrapped
// ({"payload": <schema>}), since a tool's arguments are always one.

// toolName is what MCP allows a tool's name to be.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// messageTool is one message type as a tool: its schema as registered, and whether
// the payload is the arguments' "payload" member.
type messageTool struct {
	schema  json.RawMessage
	wrapped bool
}

// syncMessageTools makes the server's message tools the entity's current message types.
// It runs when the entity's server starts and before each new session opens, so that a
// schema added to the type reaches the next client.
func (en *entry) syncMessageTools(ctx context.Context) error {
	e, err := en.s.deps.Entities.Known(ctx, en.url)
	if err != nil {
		return err
	}
	declared := map[string]json.RawMessage{}
	if err := unmarshalSchemas(e.InboxSchemas, declared); err != nil {
		return err
	}
	t, err := en.s.deps.Entities.Type(ctx, e.Type)
	switch {
	case err == nil:
		if err := unmarshalSchemas(t.InboxSchemas, declared); err != nil { // the type's win
			return err
		}
	case !errors.Is(err, entity.ErrNotFound):
		return err
	}
	en.toolsMu.Lock()
	defer en.toolsMu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(declared)) {
		if name == "send" || name == composer.InputType || name == editortool.OfferType ||
			name == editortool.ResultType || !toolName.MatchString(name) {
			continue // send is the composer's tool; the editor tools' messages are the ACP adapter's; a name MCP refuses is not offered
		}
		tool := toolOf(declared[name])
		if old, ok := en.tools[name]; ok && bytes.Equal(old.schema, tool.schema) {
			continue
		}
		en.tools[name] = tool
		en.server.AddTool(&mcp.Tool{Name: name, InputSchema: tool.schema,
			Description: fmt.Sprintf("Send the entity %s a %q message (its inbox schema is the input schema); "+
				"answers the offset after it, to follow the reply from.", en.url, name)},
			en.sendMessage(name))
	}
	var gone []string
	for name := range en.tools {
		if _, ok := declared[name]; !ok {
			gone = append(gone, name)
			delete(en.tools, name)
		}
	}
	if len(gone) > 0 {
		en.server.RemoveTools(gone...)
	}
	return nil
}

func unmarshalSchemas(raw json.RawMessage, into map[string]json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("inbox schemas: %w", err)
	}
	maps.Copy(into, m)
	return nil
}

// toolOf is the tool of a message schema: the schema itself when it describes an
// object (kept byte for byte, $schema and $defs and all), else wrapped in one.
func toolOf(schema json.RawMessage) messageTool {
	var head struct {
		Type any `json:"type"`
	}
	if json.Unmarshal(schema, &head) == nil && head.Type == "object" {
		return messageTool{schema: schema}
	}
	wrapped, _ := json.Marshal(map[string]any{"type": "object", "required": []string{"payload"},
		"properties": map[string]json.RawMessage{"payload": schema}})
	return messageTool{schema: wrapped, wrapped: true}
}

// sendMessage is the handler of message type name's tool.
func (en *entry) sendMessage(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		en.toolsMu.Lock()
		tool := en.tools[name]
		en.toolsMu.Unlock()
		e, p, err := en.writer(ctx, req)
		if err != nil {
			return toolError(err), nil
		}
		payload := req.Params.Arguments
		if len(payload) == 0 || string(payload) == "null" {
			payload = json.RawMessage(`{}`)
		}
		if tool.wrapped {
			var args struct {
				Payload json.RawMessage `json:"payload"`
			}
			if err := json.Unmarshal(payload, &args); err != nil || len(args.Payload) == 0 {
				return toolError(errors.New(`give the message as the argument "payload"`)), nil
			}
			payload = args.Payload
		}
		res, err := en.s.deps.Sender.Send(ctx, e, &inbox.SendRequest{Type: name, Payload: payload,
			Mode: wire.ModeImmediate, Sender: p.URL()})
		if err != nil {
			return toolError(sendFailure(err)), nil
		}
		out := sendOutput{Txid: res.Txid, Offset: res.Offset.String()}
		text, _ := json.Marshal(out)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}, StructuredContent: out}, nil
	}
}

func toolError(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
}
