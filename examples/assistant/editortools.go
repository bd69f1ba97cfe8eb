package assistant

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/entityd/entityd/runtime"
)

// toolCommand is the dynamic command the assistant offers while an editor offers tools;
// toolOwner owns its layer.
const (
	toolCommand = "tool"
	toolOwner   = "editor-tools"
)

// maxToolText bounds how much of a tool's result the reply quotes.
const maxToolText = 2000

// offerToolCommand registers /tool while some editor session offers tools, and
// removes it once none does (an identical registration writes nothing).
func offerToolCommand(ctx *runtime.Context) error {
	var regs []runtime.SlashCommandRegistration
	for _, set := range ctx.EditorToolsets() {
		if len(set.Tools) > 0 {
			regs = []runtime.SlashCommandRegistration{{Owner: toolOwner, Definition: runtime.SlashCommand{
				Name:        toolCommand,
				Description: strp("Call a tool of your editor's MCP servers (/tool alone lists them)"),
				Arguments: []runtime.SlashCommandArgument{
					{Name: "tool", Type: "string", Description: strp("<server>/<tool>, or the tool's name when it is unique")},
					{Name: "arguments", Type: "string", Description: strp("the tool's arguments as a JSON object")}},
			}}}
			break
		}
	}
	return ctx.SlashCommands.ReplaceOwned(toolOwner, regs)
}

// callTool answers "/tool [<server>/<tool> [json]]": without a tool it lists the tools
// of the prompt's editor session; with one it calls it (the result is a wake of its own).
func callTool(ctx *runtime.Context, input string) error {
	set, ok := ctx.EditorTools()
	if !ok || len(set.Tools) == 0 {
		return ctx.WriteText("No editor tools: attach with `entityd acp` from an editor whose session names stdio MCP servers.")
	}
	name, args, _ := strings.Cut(input, " ")
	if name == "" {
		var b strings.Builder
		fmt.Fprintf(&b, "Your editor offers %d tool(s):", len(set.Tools))
		for _, t := range set.Tools {
			fmt.Fprintf(&b, "\n- %s/%s", t.Server, t.Name)
			if t.Description != "" {
				b.WriteString(" — " + firstLine(t.Description))
			}
		}
		b.WriteString("\nCall one with /tool <server>/<tool> {\"argument\": \"value\"}.")
		return ctx.WriteText(b.String())
	}
	server, tool, qualified := strings.Cut(name, "/")
	if !qualified {
		server, tool = "", name
		for _, t := range set.Tools {
			if t.Name == tool {
				if server != "" {
					return ctx.WriteText(fmt.Sprintf("Several servers have a tool %q; say which: /tool <server>/%s.", tool, tool))
				}
				server = t.Server
			}
		}
		if server == "" {
			return ctx.WriteText(fmt.Sprintf("Your editor offers no tool %q; /tool lists them.", tool))
		}
	}
	call := runtime.EditorToolCall{Session: set.Session, Server: server, Tool: tool}
	if args = strings.TrimSpace(args); args != "" {
		if !json.Valid([]byte(args)) || !strings.HasPrefix(args, "{") {
			return ctx.WriteText("The arguments must be a JSON object, e.g. /tool " + server + "/" + tool + ` {"path": "README.md"}.`)
		}
		call.Arguments = json.RawMessage(args)
	}
	if err := ctx.WriteText(fmt.Sprintf("Calling %s/%s in your editor…", server, tool)); err != nil {
		return err
	}
	_, err := ctx.CallEditorTool(call)
	return err
}

// describeResult answers an editor tool's result with its text.
func describeResult(ctx *runtime.Context, msg runtime.InboxWake) error {
	r, ok := runtime.EditorToolResultOf(msg)
	if !ok {
		return nil
	}
	text := r.Text()
	if len(text) > maxToolText {
		cut := maxToolText
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut] + "…"
	}
	verb := "returned"
	if r.IsError {
		verb = "failed"
	}
	return ctx.WriteText(fmt.Sprintf("%s/%s %s:\n%s", r.Server, r.Tool, verb, text))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
