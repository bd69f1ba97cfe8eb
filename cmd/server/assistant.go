package main

import (
	"fmt"
	"strings"

	"github.com/entityd/entityd/runtime"
)

func strp(s string) *string { return &s }

func truep() *bool { b := true; return &b }

// assistant is the demo entity: it answers every composer_input with a text event that
// says how it read the message — the primary command, further commands (modifiers), the
// references (files, symbols, branches) and the plain text — without calling any model.
func assistant(skillsDir string) runtime.EntityDefinition {
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
			msg, ok := ctx.Wake.(runtime.InboxWake)
			if !ok {
				return nil
			}
			ci, ok := msg.ComposerInput()
			if !ok {
				return ctx.WriteText(fmt.Sprintf("Received a %q message.", msg.Type))
			}
			return ctx.WriteText(describe(ci))
		},
	}
}

// describe explains how the assistant interpreted a composer_input.
func describe(ci *composerInput) string {
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
