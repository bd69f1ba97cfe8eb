// Package assistant is the demo entity type that `make run` serves in the server, and
// that cmd/entityd-external serves from another process with the same code.
package assistant

import (
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/entityd/entityd/runtime"
	"github.com/entityd/entityd/wire/composer"
	"github.com/entityd/entityd/wire/editortool"
)

func strp(s string) *string { return &s }

func truep() *bool { b := true; return &b }

// Definition is the demo entity: it answers every composer_input with a reply (a run with
// one text, see runtime.Context.WriteText, which Electric's UI shows) that says how it
// read the message — the primary command, further commands (modifiers), the references
// (files, symbols, branches) and the plain text — without calling any model.
//
// When an editor attached through `entityd acp` offers tools (the stdio MCP servers of
// its session, an editor_tools message), the assistant registers a dynamic /tool
// command: "/tool" lists them, "/tool <server>/<tool> {json arguments}" calls one on the
// editor's machine, and the result (an editor_tool_result message) is answered with its
// text — see editortools.go.
//
// On every wake it also runs the skills loader over skillsDir: the skills there become
// dynamic slash commands (owner "skills", on top of the static ones of the same name),
// and a message whose first command names a skill gets that skill inserted into the
// entity's context ("skill:<name>", once), which the reply mentions.
func Definition(skillsDir string) runtime.EntityDefinition {
	skills := runtime.NewSkillsLoader(skillsDir)
	return runtime.EntityDefinition{
		Type:        "assistant",
		Description: "Demo assistant: answers composer_input messages by describing how it read them",
		SlashCommands: []runtime.SlashCommand{
			{Name: "quickstart", Description: strp("Show how to get started")},
			{Name: "search", Description: strp("Search the workspace"), Arguments: []runtime.SlashCommandArgument{
				{Name: "query", Type: "string", Required: truep(), Description: strp("what to look for")}}},
			{Name: "pr-review", Description: strp("Review a pull request"), Arguments: []runtime.SlashCommandArgument{
				{Name: "number", Type: "number", Required: truep()}, {Name: "include_tests", Type: "boolean"}}},
		},
		Handler: func(ctx *runtime.Context) error {
			loaded, err := skills.Load(ctx)
			if err != nil {
				// A broken skills directory must not silence the assistant: answer anyway.
				ctx.Log.Warn("skills not loaded", zap.String("skills_dir", skillsDir), zap.Error(err))
				loaded = nil
			}
			msg, ok := ctx.Wake.(runtime.InboxWake)
			if !ok {
				return nil
			}
			switch msg.Type {
			case editortool.OfferType:
				return offerToolCommand(ctx)
			case editortool.ResultType:
				return describeResult(ctx, msg)
			}
			ci, ok := msg.ComposerInput()
			if !ok {
				return ctx.WriteText(fmt.Sprintf("Received a %q message.", msg.Type))
			}
			if cmds := ci.SlashCommandNodes(); len(cmds) > 0 && cmds[0].Name == toolCommand {
				return callTool(ctx, strings.TrimSpace(ci.TextAfterNode(cmds[0])))
			}
			reply := describe(ci)
			if loaded != nil {
				reply += " " + describeLoaded(loaded)
			}
			return ctx.WriteText(reply)
		},
	}
}

// describeLoaded says which skill the message put into context.
func describeLoaded(l *runtime.LoadedSkill) string {
	s := "Loaded skill " + l.Command + " into context"
	switch n := len(l.Skill.References); n {
	case 0:
	case 1:
		s += " with 1 reference file"
	default:
		s += fmt.Sprintf(" with %d reference files", n)
	}
	return s + "."
}

// describe explains how the assistant interpreted a composer_input.
func describe(ci *composer.Input) string {
	var b strings.Builder
	cmds := ci.SlashCommandNodes()
	if len(cmds) == 0 {
		b.WriteString("No command; ")
	} else {
		fmt.Fprintf(&b, "Command /%s", cmds[0].Name)
		if args := strings.TrimSpace(ci.TextAfterNode(cmds[0])); args != "" {
			fmt.Fprintf(&b, " with input %q", args)
		}
		b.WriteString("; ")
		if len(cmds) > 1 {
			var mods []string
			for _, c := range cmds[1:] {
				mods = append(mods, "/"+c.Name)
			}
			fmt.Fprintf(&b, "modifiers %s; ", strings.Join(mods, ", "))
		}
	}
	var refs []string
	for _, n := range ci.KnownNodes() {
		switch n.Kind {
		case "file":
			refs = append(refs, "file "+n.Path)
		case "symbol":
			refs = append(refs, "symbol "+n.Name)
		case "branch":
			refs = append(refs, "branch "+n.Name)
		}
	}
	if len(refs) > 0 {
		fmt.Fprintf(&b, "references %s; ", strings.Join(refs, ", "))
	}
	if u := ci.UnknownNodes(); len(u) > 0 {
		fmt.Fprintf(&b, "%d node(s) of unknown kinds kept as sent; ", len(u))
	}
	fmt.Fprintf(&b, "text %q.", strings.TrimSpace(ci.Source))
	return b.String()
}
