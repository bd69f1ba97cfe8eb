package slashcmd

import (
	"encoding/json"
	"regexp"
	"testing"
	"unicode/utf8"

	"github.com/entityd/entityd/wire/composer"
)

// The reference's grammars, as regular expressions: the hand-written matchers must agree
// with them on every input.
var (
	referenceName         = regexp.MustCompile(`^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$`)
	referenceArgumentName = regexp.MustCompile(`^[a-z][a-zA-Z0-9_]*$`)
)

func FuzzGrammarMatchesTheReferencePatterns(f *testing.F) {
	for _, s := range []string{"", "a", "pr-review", "a--b", "a-", "-a", "Quick", "a1-2b", "x_y", "camelCase", "é", "a\n", "a-b\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := composer.ValidCommandName(s), referenceName.MatchString(s); got != want {
			t.Fatalf("composer.ValidCommandName(%q) = %v, the reference pattern says %v", s, got, want)
		}
		if got, want := composer.ValidArgumentName(s), referenceArgumentName.MatchString(s); got != want {
			t.Fatalf("composer.ValidArgumentName(%q) = %v, the reference pattern says %v", s, got, want)
		}
	})
}

// FuzzValidateDefinitions: validation never panics, and whatever it accepts decodes and
// keeps every rule (grammar, unique names, limits), so nothing invalid reaches a stream.
func FuzzValidateDefinitions(f *testing.F) {
	for _, s := range []string{
		`[{"name":"pr-review","description":"Review a pull request","arguments":[{"name":"number","type":"number","required":true,"description":"PR number"},{"name":"include_tests","type":"boolean"}]}]`,
		`[{"name":"QuickStart"},{"name":"QuickStart"}]`,
		`[{"name":"a"},{"name":"a"}]`,
		`[{"name":"a","arguments":[{"name":"x","type":"date"}]}]`,
		`[{"name":"a","extra":1}]`,
		`{"name":"a"}`, `[]`, `null`, `[null]`, `[{"name":"a","description":null}]`,
		`[{"name":"a","arguments":[{"name":"x","type":"string","required":"yes"}]}]`,
	} {
		f.Add([]byte(s))
	}
	limits := Limits{MaxNameLength: 8, MaxDescriptionLength: 16, MaxArguments: 3, MaxCommands: 4}
	f.Fuzz(func(t *testing.T, raw []byte) {
		shape := CheckShape(raw, "/slash_commands")
		rules := ValidateDefinitions(raw, "/slash_commands", limits)
		if len(shape) > 0 || len(rules) > 0 || !json.Valid(raw) {
			return
		}
		defs, err := ParseDefinitions(raw)
		if err != nil {
			t.Fatalf("accepted %s but it does not decode: %v", raw, err)
		}
		if d := Validate(defs, "/slash_commands", limits); len(d) > 0 {
			t.Fatalf("accepted %s but Validate refuses the decoded form: %v", raw, d)
		}
		if len(defs) > limits.MaxCommands {
			t.Fatalf("accepted %d commands, limit %d", len(defs), limits.MaxCommands)
		}
		seen := map[string]bool{}
		for _, d := range defs {
			if !referenceName.MatchString(d.Name) || utf8.RuneCountInString(d.Name) > limits.MaxNameLength {
				t.Fatalf("accepted command name %q", d.Name)
			}
			if seen[d.Name] {
				t.Fatalf("accepted duplicate command name %q", d.Name)
			}
			seen[d.Name] = true
			if d.Description != nil && utf8.RuneCountInString(*d.Description) > limits.MaxDescriptionLength {
				t.Fatalf("accepted a description of %d characters", utf8.RuneCountInString(*d.Description))
			}
			if len(d.Arguments) > limits.MaxArguments {
				t.Fatalf("accepted %d arguments, limit %d", len(d.Arguments), limits.MaxArguments)
			}
			for _, a := range d.Arguments {
				if !referenceArgumentName.MatchString(a.Name) {
					t.Fatalf("accepted argument name %q", a.Name)
				}
				if a.Type != ArgString && a.Type != ArgNumber && a.Type != ArgBoolean {
					t.Fatalf("accepted argument type %q", a.Type)
				}
			}
		}
	})
}
