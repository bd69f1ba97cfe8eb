package mcpserve

import (
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/entityd/entityd/slashcmd"
)

// maxCompletions is MCP's cap on the values of one completion reply.
const maxCompletions = 100

// complete answers completion/complete for prompt arguments whose declaration
// enumerates the values: booleans (true, false). Command definitions have no other
// enumerations yet, so every other argument completes to nothing.
func (en *entry) complete(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	res := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}
	if req.Params.Ref.Type != "ref/prompt" {
		return res, nil
	}
	row, ok := en.row(req.Params.Ref.Name)
	if !ok {
		return nil, invalidParams("unknown prompt %q", req.Params.Ref.Name)
	}
	var values []string
	for _, a := range row.Arguments {
		if a.Name == req.Params.Argument.Name && a.Type == slashcmd.ArgBoolean {
			values = []string{"true", "false"}
		}
	}
	for _, v := range values {
		if strings.HasPrefix(v, req.Params.Argument.Value) && len(res.Completion.Values) < maxCompletions {
			res.Completion.Values = append(res.Completion.Values, v)
		}
	}
	res.Completion.Total = len(res.Completion.Values)
	return res, nil
}
