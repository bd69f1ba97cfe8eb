package mcpserve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/entityd/entityd/slashcmd"
)

// inputArgument is the one optional argument of a command that declares none: ACP
// commands take free text after the name (their input.hint), and MCP prompts have only
// named arguments, so the free text travels as "input".
const inputArgument = "input"

// promptOf is the MCP prompt of an effective command row.
func promptOf(row slashcmd.Row) *mcp.Prompt {
	p := &mcp.Prompt{Name: row.Name, Title: "/" + row.Name, Arguments: []*mcp.PromptArgument{}}
	p.Description = "The slash command /" + row.Name // editors list prompts by description
	if row.Description != nil && *row.Description != "" {
		p.Description = *row.Description
	}
	if len(row.Arguments) == 0 {
		p.Arguments = append(p.Arguments, &mcp.PromptArgument{Name: inputArgument,
			Description: "Free text after the command"})
		return p
	}
	for _, a := range row.Arguments {
		arg := &mcp.PromptArgument{Name: a.Name, Required: a.Required != nil && *a.Required}
		desc := a.Type
		if a.Description != nil {
			desc = *a.Description + " (" + a.Type + ")"
		}
		arg.Description = desc
		p.Arguments = append(p.Arguments, arg)
	}
	return p
}

// invalidParams is the JSON-RPC error MCP asks for a bad prompt invocation (-32602).
func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// checkArguments applies the command's argument declarations to an invocation: no
// unknown names, every required one present, numbers and booleans well formed (MCP
// sends every value as a string, so the types are checked here).
func checkArguments(row slashcmd.Row, args map[string]string) error {
	declared := map[string]slashcmd.Argument{}
	for _, a := range row.Arguments {
		declared[a.Name] = a
	}
	for name, v := range args {
		a, ok := declared[name]
		if !ok {
			if len(row.Arguments) == 0 && name == inputArgument {
				continue
			}
			return invalidParams("prompt %q has no argument %q", row.Name, name)
		}
		switch a.Type {
		case slashcmd.ArgNumber:
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
				return invalidParams("argument %q of prompt %q must be a number", name, row.Name)
			}
		case slashcmd.ArgBoolean:
			if v != "true" && v != "false" {
				return invalidParams("argument %q of prompt %q must be true or false", name, row.Name)
			}
		}
	}
	for _, a := range row.Arguments {
		if a.Required != nil && *a.Required {
			if _, ok := args[a.Name]; !ok {
				return invalidParams("prompt %q needs argument %q", row.Name, a.Name)
			}
		}
	}
	return nil
}

// invocation is the composer text that runs the command with args (slashcmd.Invocation:
// values that could read as another argument are quoted, so two invocations never
// render alike). A command that declares no arguments takes its free text as is.
func invocation(row slashcmd.Row, args map[string]string) string {
	if len(row.Arguments) == 0 {
		if in := strings.TrimSpace(args[inputArgument]); in != "" {
			return "/" + row.Name + " " + in
		}
		return "/" + row.Name
	}
	names := make([]string, len(row.Arguments))
	for i, a := range row.Arguments {
		names[i] = a.Name
	}
	return slashcmd.Invocation(row.Name, names, args)
}

// promptHandler answers prompts/get for one row of the entity at url: the user message
// that invokes it, then the instruction that delivers it (deliveryInstruction).
func promptHandler(url string, row slashcmd.Row) mcp.PromptHandler {
	return func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		if err := checkArguments(row, req.Params.Arguments); err != nil {
			return nil, err
		}
		res := &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
			{Role: "user", Content: &mcp.TextContent{Text: invocation(row, req.Params.Arguments)}},
			{Role: "user", Content: &mcp.TextContent{Text: deliveryInstruction(url, row, req.Params.Arguments)}}}}
		if row.Description != nil {
			res.Description = *row.Description
		}
		return res, nil
	}
}

// deliveryInstruction is a prompt's second message. Editors (Claude Code, VS Code) put
// the messages of prompts/get into their model's conversation, where "/pr-review 7"
// alone reaches nobody: the entity is on the other side of this server. The message
// asks the model to deliver the invocation with the send tool, giving the exact
// arguments and a fresh idempotency key, so that a model that calls the tool again
// (a retry) delivers the command once.
func deliveryInstruction(url string, row slashcmd.Row, args map[string]string) string {
	key := make([]byte, 8)
	_, _ = rand.Read(key)
	in, _ := json.Marshal(sendInput{Prompt: row.Name, Arguments: args, Key: "prompt-" + hex.EncodeToString(key)})
	return "This is the command /" + row.Name + " of the entity " + url +
		", which runs on the server, not here. Deliver it: call this server's send tool with exactly these arguments:\n" +
		string(in) + "\nThen tell the user it was sent; the entity's reply arrives on its stream."
}
