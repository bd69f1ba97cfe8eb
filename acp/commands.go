package acp

import (
	"strings"

	sdk "github.com/coder/acp-go-sdk"
)

// availableCommands maps the entity's effective slash commands (the list endpoint's rows,
// sorted by name) to ACP's available commands, in the same order. ACP has no structured
// arguments, only a free-text input with a hint, so the arguments become the hint:
// required ones in <>, optional ones in [] ("<number> [include_tests]"); a command
// without arguments takes no input. A null description becomes "" (ACP requires one).
func availableCommands(rows []commandRow) []sdk.AvailableCommand {
	out := make([]sdk.AvailableCommand, 0, len(rows))
	for _, r := range rows {
		c := sdk.AvailableCommand{Name: r.Name}
		if r.Description != nil {
			c.Description = *r.Description
		}
		if hint := inputHint(r.Arguments); hint != "" {
			c.Input = &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: hint}}
		}
		out = append(out, c)
	}
	return out
}

// inputHint is the hint of a command's arguments, "" without arguments.
func inputHint(args []argument) string {
	parts := make([]string, 0, len(args))
	for _, a := range args {
		if a.Required != nil && *a.Required {
			parts = append(parts, "<"+a.Name+">")
		} else {
			parts = append(parts, "["+a.Name+"]")
		}
	}
	return strings.Join(parts, " ")
}
