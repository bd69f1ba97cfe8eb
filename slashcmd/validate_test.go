package slashcmd

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/entityd/entityd/internal/validation"
)

const cmdBase = "/slash_commands"

func cmdDetail(path, msg string) validation.Detail {
	return validation.Detail{Path: path, Message: msg}
}

func TestValidateDefinitions(t *testing.T) {
	noLimits := Limits{}
	tests := []struct {
		name   string
		raw    string // "" = absent (nil)
		limits Limits
		want   validation.Details
	}{
		// pinned by the reference tests
		{"valid pr-review with arguments",
			`[{"name":"pr-review","description":"Review a pull request","arguments":[{"name":"number","type":"number","required":true,"description":"PR number"},{"name":"include_tests","type":"boolean"}]}]`,
			DefaultLimits, nil},
		{"two QuickStart give two format errors", `[{"name":"QuickStart"},{"name":"QuickStart"}]`, DefaultLimits,
			validation.Details{
				cmdDetail("/slash_commands/0/name", "must be a lowercase kebab-case command name"),
				cmdDetail("/slash_commands/1/name", "must be a lowercase kebab-case command name"),
			}},
		{"one QuickStart gives exactly one detail", `[{"name":"QuickStart"}]`, DefaultLimits,
			validation.Details{cmdDetail("/slash_commands/0/name", "must be a lowercase kebab-case command name")}},

		{"absent", "", DefaultLimits, nil},
		{"empty list", `[]`, DefaultLimits, nil},
		{"not an array", `{"name":"x"}`, DefaultLimits, validation.Details{cmdDetail(cmdBase, "must be an array")}},
		{"null is not an array", `null`, DefaultLimits, validation.Details{cmdDetail(cmdBase, "must be an array")}},
		{"entry not an object", `["x",null,[],{"name":"ok"}]`, DefaultLimits, validation.Details{
			cmdDetail("/slash_commands/0", "must be an object"),
			cmdDetail("/slash_commands/1", "must be an object"),
			cmdDetail("/slash_commands/2", "must be an object"),
		}},

		// names
		{"name forms", `[{"name":"a"},{"name":"a1-b2-c"},{"name":"x9"}]`, DefaultLimits, nil},
		{"bad names", `[{"name":"-a"},{"name":"a-"},{"name":"a--b"},{"name":"/a"},{"name":"1a"},{"name":""},{"name":"a_b"},{"name":5},{"name":null},{}]`, DefaultLimits,
			validation.Details{
				cmdDetail("/slash_commands/0/name", "must be a lowercase kebab-case command name"),
				cmdDetail("/slash_commands/1/name", "must be a lowercase kebab-case command name"),
				cmdDetail("/slash_commands/2/name", "must be a lowercase kebab-case command name"),
				cmdDetail("/slash_commands/3/name", "must be a lowercase kebab-case command name"),
				cmdDetail("/slash_commands/4/name", "must be a lowercase kebab-case command name"),
				cmdDetail("/slash_commands/5/name", "must be a lowercase kebab-case command name"),
				cmdDetail("/slash_commands/6/name", "must be a lowercase kebab-case command name"),
				cmdDetail("/slash_commands/7/name", "must be a lowercase kebab-case command name"),
				cmdDetail("/slash_commands/8/name", "must be a lowercase kebab-case command name"),
				cmdDetail("/slash_commands/9/name", "must be a lowercase kebab-case command name"),
			}},
		{"duplicate reported on the later ones only", `[{"name":"deploy"},{"name":"ship"},{"name":"deploy"},{"name":"deploy"}]`, DefaultLimits,
			validation.Details{
				cmdDetail("/slash_commands/2/name", "must be unique"),
				cmdDetail("/slash_commands/3/name", "must be unique"),
			}},
		{"invalid first does not make the second a duplicate", `[{"name":"Deploy"},{"name":"deploy"}]`, DefaultLimits,
			validation.Details{cmdDetail("/slash_commands/0/name", "must be a lowercase kebab-case command name")}},

		// description
		{"description not a string", `[{"name":"a","description":5},{"name":"b","description":null},{"name":"c","description":"ok"}]`, DefaultLimits,
			validation.Details{
				cmdDetail("/slash_commands/0/description", "must be a string"),
				cmdDetail("/slash_commands/1/description", "must be a string"),
			}},

		// arguments
		{"arguments not an array", `[{"name":"a","arguments":{}},{"name":"b","arguments":null}]`, DefaultLimits,
			validation.Details{
				cmdDetail("/slash_commands/0/arguments", "must be an array"),
				cmdDetail("/slash_commands/1/arguments", "must be an array"),
			}},
		{"argument not an object", `[{"name":"a","arguments":["x",{"name":"ok","type":"string"},null]}]`, DefaultLimits,
			validation.Details{
				cmdDetail("/slash_commands/0/arguments/0", "must be an object"),
				cmdDetail("/slash_commands/0/arguments/2", "must be an object"),
			}},
		{"argument names", `[{"name":"a","arguments":[{"name":"camelCase","type":"string"},{"name":"snake_case_2","type":"string"},{"name":"x","type":"string"}]}]`, DefaultLimits, nil},
		{"bad argument names", `[{"name":"a","arguments":[{"name":"Bad","type":"string"},{"name":"bad-arg","type":"string"},{"name":"_x","type":"string"},{"name":"1x","type":"string"},{"name":7,"type":"string"},{"type":"string"}]}]`, DefaultLimits,
			validation.Details{
				cmdDetail("/slash_commands/0/arguments/0/name", "must be a valid argument name"),
				cmdDetail("/slash_commands/0/arguments/1/name", "must be a valid argument name"),
				cmdDetail("/slash_commands/0/arguments/2/name", "must be a valid argument name"),
				cmdDetail("/slash_commands/0/arguments/3/name", "must be a valid argument name"),
				cmdDetail("/slash_commands/0/arguments/4/name", "must be a valid argument name"),
				cmdDetail("/slash_commands/0/arguments/5/name", "must be a valid argument name"),
			}},
		{"duplicate argument names, per command", `[{"name":"a","arguments":[{"name":"x","type":"string"},{"name":"x","type":"number"}]},{"name":"b","arguments":[{"name":"x","type":"string"}]}]`, DefaultLimits,
			validation.Details{cmdDetail("/slash_commands/0/arguments/1/name", "must be unique")}},
		{"argument types", `[{"name":"a","arguments":[{"name":"a","type":"integer"},{"name":"b"},{"name":"c","type":null},{"name":"d","type":"String"},{"name":"e","type":"boolean"}]}]`, DefaultLimits,
			validation.Details{
				cmdDetail("/slash_commands/0/arguments/0/type", "must be string, number, or boolean"),
				cmdDetail("/slash_commands/0/arguments/1/type", "must be string, number, or boolean"),
				cmdDetail("/slash_commands/0/arguments/2/type", "must be string, number, or boolean"),
				cmdDetail("/slash_commands/0/arguments/3/type", "must be string, number, or boolean"),
			}},
		{"argument required", `[{"name":"a","arguments":[{"name":"a","type":"string","required":"yes"},{"name":"b","type":"string","required":null},{"name":"c","type":"string","required":false}]}]`, DefaultLimits,
			validation.Details{
				cmdDetail("/slash_commands/0/arguments/0/required", "must be a boolean"),
				cmdDetail("/slash_commands/0/arguments/1/required", "must be a boolean"),
			}},
		{"argument description", `[{"name":"a","arguments":[{"name":"a","type":"string","description":1}]}]`, DefaultLimits,
			validation.Details{cmdDetail("/slash_commands/0/arguments/0/description", "must be a string")}},
		{"order within an entry", `[{"description":1,"arguments":[{"name":"B","type":"x","required":1,"description":2},7],"name":"X"}]`, DefaultLimits,
			validation.Details{
				cmdDetail("/slash_commands/0/name", "must be a lowercase kebab-case command name"),
				cmdDetail("/slash_commands/0/description", "must be a string"),
				cmdDetail("/slash_commands/0/arguments/0/name", "must be a valid argument name"),
				cmdDetail("/slash_commands/0/arguments/0/type", "must be string, number, or boolean"),
				cmdDetail("/slash_commands/0/arguments/0/required", "must be a boolean"),
				cmdDetail("/slash_commands/0/arguments/0/description", "must be a string"),
				cmdDetail("/slash_commands/0/arguments/1", "must be an object"),
			}},
		{"extra keys are not this layer's business", `[{"name":"a","extra":1,"arguments":[{"name":"x","type":"string","more":2}]}]`, DefaultLimits, nil},

		// limits
		{"name length limit", `[{"name":"` + strings.Repeat("a", 65) + `"},{"name":"` + strings.Repeat("b", 64) + `"}]`, DefaultLimits,
			validation.Details{cmdDetail("/slash_commands/0/name", "must be at most 64 characters")}},
		{"invalid long name gets both", `[{"name":"` + strings.Repeat("A", 65) + `"}]`, DefaultLimits,
			validation.Details{
				cmdDetail("/slash_commands/0/name", "must be a lowercase kebab-case command name"),
				cmdDetail("/slash_commands/0/name", "must be at most 64 characters"),
			}},
		{"description length limit counts code points", `[{"name":"a","description":"` + strings.Repeat("é", 1000) + `"},{"name":"b","description":"` + strings.Repeat("x", 1001) + `"}]`, DefaultLimits,
			validation.Details{cmdDetail("/slash_commands/1/description", "must be at most 1000 characters")}},
		{"argument count limit", `[{"name":"a","arguments":[` + argList(33) + `]},{"name":"b","arguments":[` + argList(32) + `]}]`, DefaultLimits,
			validation.Details{cmdDetail("/slash_commands/0/arguments", "must contain at most 32 arguments")}},
		{"argument name and description limits", `[{"name":"a","arguments":[{"name":"` + strings.Repeat("a", 65) + `","type":"string","description":"` + strings.Repeat("d", 1001) + `"}]}]`, DefaultLimits,
			validation.Details{
				cmdDetail("/slash_commands/0/arguments/0/name", "must be at most 64 characters"),
				cmdDetail("/slash_commands/0/arguments/0/description", "must be at most 1000 characters"),
			}},
		{"command count limit", "[" + cmdList(501) + "]", DefaultLimits, validation.Details{cmdDetail(cmdBase, "must contain at most 500 commands")}},
		{"command count at the limit", "[" + cmdList(500) + "]", DefaultLimits, nil},
		{"limits come after the reference checks", `[{"name":"` + strings.Repeat("a", 5) + `"},{"name":"aaaaa","description":"toolong"},{"name":"BAD"}]`,
			Limits{MaxNameLength: 4, MaxDescriptionLength: 3, MaxCommands: 2},
			validation.Details{
				cmdDetail("/slash_commands/1/name", "must be unique"),
				cmdDetail("/slash_commands/2/name", "must be a lowercase kebab-case command name"),
				cmdDetail(cmdBase, "must contain at most 2 commands"),
				cmdDetail("/slash_commands/0/name", "must be at most 4 characters"),
				cmdDetail("/slash_commands/1/name", "must be at most 4 characters"),
				cmdDetail("/slash_commands/1/description", "must be at most 3 characters"),
			}},
		{"zero limits mean unlimited", `[{"name":"` + strings.Repeat("a", 500) + `","arguments":[` + argList(100) + `]}]`, noLimits, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var raw json.RawMessage
			if tt.raw != "" {
				raw = json.RawMessage(tt.raw)
			}
			got := ValidateDefinitions(raw, cmdBase, tt.limits)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ValidateDefinitions:\n got  %v\n want %v", got, tt.want)
			}
		})
	}
}

func argList(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `{"name":"a` + strconv.Itoa(i) + `","type":"string"}`
	}
	return strings.Join(parts, ",")
}

func cmdList(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `{"name":"c` + strconv.Itoa(i) + `"}`
	}
	return strings.Join(parts, ",")
}

func TestValidateDefinitionsBase(t *testing.T) {
	got := ValidateDefinitions(json.RawMessage(`[{"name":"X"}]`), "/", DefaultLimits)
	want := validation.Details{cmdDetail("/0/name", "must be a lowercase kebab-case command name")}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v", got)
	}
}

func TestCheckShape(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want validation.Details
	}{
		{"absent", "", nil},
		{"valid", `[{"name":"pr-review","description":"d","arguments":[{"name":"n","type":"number","required":true,"description":"x"}]}]`, nil},
		{"semantic errors pass this layer", `[{"name":"QuickStart"},{"name":"QuickStart","arguments":[{"name":"Bad"}]}]`, nil},
		{"not an array", `{}`, validation.Details{cmdDetail(cmdBase, "must be array")}},
		{"null", `null`, validation.Details{cmdDetail(cmdBase, "must be array")}},
		{"element not an object", `[1,"x",null,[]]`, validation.Details{
			cmdDetail("/slash_commands/0", "must be object"),
			cmdDetail("/slash_commands/1", "must be object"),
			cmdDetail("/slash_commands/2", "must be object"),
			cmdDetail("/slash_commands/3", "must be object"),
		}},
		{"missing name", `[{"description":"d"}]`, validation.Details{cmdDetail("/slash_commands/0", "must have required property 'name'")}},
		{"extra keys", `[{"name":"a","extra":1,"owner":"x"}]`, validation.Details{
			cmdDetail("/slash_commands/0/extra", "must NOT have additional properties"),
			cmdDetail("/slash_commands/0/owner", "must NOT have additional properties"),
		}},
		{"extra key order is JavaScript's", `[{"name":"a","z":1,"10":1,"2":1}]`, validation.Details{
			cmdDetail("/slash_commands/0/2", "must NOT have additional properties"),
			cmdDetail("/slash_commands/0/10", "must NOT have additional properties"),
			cmdDetail("/slash_commands/0/z", "must NOT have additional properties"),
		}},
		{"extra key path is escaped", `[{"name":"a","a/b":1}]`, validation.Details{cmdDetail("/slash_commands/0/a~1b", "must NOT have additional properties")}},
		{"wrong types", `[{"name":5,"description":null,"arguments":{}}]`, validation.Details{
			cmdDetail("/slash_commands/0/name", "must be string"),
			cmdDetail("/slash_commands/0/description", "must be string"),
			cmdDetail("/slash_commands/0/arguments", "must be array"),
		}},
		{"Ajv order: required, additional, properties", `[{"arguments":"x","extra":1,"description":2}]`, validation.Details{
			cmdDetail("/slash_commands/0", "must have required property 'name'"),
			cmdDetail("/slash_commands/0/extra", "must NOT have additional properties"),
			cmdDetail("/slash_commands/0/description", "must be string"),
			cmdDetail("/slash_commands/0/arguments", "must be array"),
		}},
		{"argument not an object", `[{"name":"a","arguments":[1]}]`, validation.Details{cmdDetail("/slash_commands/0/arguments/0", "must be object")}},
		{"argument missing name", `[{"name":"a","arguments":[{"type":"string"}]}]`, validation.Details{cmdDetail("/slash_commands/0/arguments/0", "must have required property 'name'")}},
		{"argument extra key", `[{"name":"a","arguments":[{"name":"x","type":"string","default":1}]}]`, validation.Details{cmdDetail("/slash_commands/0/arguments/0/default", "must NOT have additional properties")}},
		{"argument wrong types", `[{"name":"a","arguments":[{"name":1,"type":"integer","required":"yes","description":false}]}]`, validation.Details{
			cmdDetail("/slash_commands/0/arguments/0/name", "must be string"),
			cmdDetail("/slash_commands/0/arguments/0/type", "must be equal to one of the allowed values"),
			cmdDetail("/slash_commands/0/arguments/0/required", "must be boolean"),
			cmdDetail("/slash_commands/0/arguments/0/description", "must be string"),
		}},
		{"argument type not a string", `[{"name":"a","arguments":[{"name":"x","type":5}]}]`, validation.Details{cmdDetail("/slash_commands/0/arguments/0/type", "must be equal to one of the allowed values")}},
		{"argument type may be absent at this layer", `[{"name":"a","arguments":[{"name":"x"}]}]`, nil},
		{"argument required null", `[{"name":"a","arguments":[{"name":"x","type":"string","required":null}]}]`, validation.Details{cmdDetail("/slash_commands/0/arguments/0/required", "must be boolean")}},
		{"argument missing name and extra key", `[{"name":"a","arguments":[{"x":1}]}]`, validation.Details{
			cmdDetail("/slash_commands/0/arguments/0", "must have required property 'name'"),
			cmdDetail("/slash_commands/0/arguments/0/x", "must NOT have additional properties"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var raw json.RawMessage
			if tt.raw != "" {
				raw = json.RawMessage(tt.raw)
			}
			got := CheckShape(raw, cmdBase)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("CheckShape:\n got  %v\n want %v", got, tt.want)
			}
		})
	}
}

func refTo[T any](v T) *T { return &v }

func TestValidateTyped(t *testing.T) {
	tests := []struct {
		name string
		defs []Definition
		want validation.Details
	}{
		{"nil is absent", nil, nil},
		{"empty", []Definition{}, nil},
		{"valid", []Definition{{Name: "pr-review", Description: refTo("Review"), Arguments: []Argument{
			{Name: "number", Type: ArgNumber, Required: refTo(true)}, {Name: "includeTests", Type: ArgBoolean},
		}}}, nil},
		{"QuickStart twice", []Definition{{Name: "QuickStart"}, {Name: "QuickStart"}}, validation.Details{
			cmdDetail("/slash_commands/0/name", "must be a lowercase kebab-case command name"),
			cmdDetail("/slash_commands/1/name", "must be a lowercase kebab-case command name"),
		}},
		{"duplicates and argument rules", []Definition{
			{Name: "a"},
			{Name: "a", Arguments: []Argument{{Name: "x", Type: "string"}, {Name: "x", Type: "text"}, {Name: "Y"}}},
		}, validation.Details{
			cmdDetail("/slash_commands/1/name", "must be unique"),
			cmdDetail("/slash_commands/1/arguments/1/name", "must be unique"),
			cmdDetail("/slash_commands/1/arguments/1/type", "must be string, number, or boolean"),
			cmdDetail("/slash_commands/1/arguments/2/name", "must be a valid argument name"),
			cmdDetail("/slash_commands/1/arguments/2/type", "must be string, number, or boolean"),
		}},
		{"limits", []Definition{{Name: strings.Repeat("a", 65), Description: refTo(strings.Repeat("d", 1001))}}, validation.Details{
			cmdDetail("/slash_commands/0/name", "must be at most 64 characters"),
			cmdDetail("/slash_commands/0/description", "must be at most 1000 characters"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Validate(tt.defs, cmdBase, DefaultLimits)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Validate:\n got  %v\n want %v", got, tt.want)
			}
		})
	}
}

func TestParseDefinitions(t *testing.T) {
	raw := json.RawMessage(`[{"name":"pr-review","description":"Review","arguments":[{"name":"number","type":"number","required":true,"description":"PR"}]},{"name":"help"}]`)
	if d := CheckShape(raw, cmdBase); d != nil {
		t.Fatalf("shape: %v", d)
	}
	if d := ValidateDefinitions(raw, cmdBase, DefaultLimits); d != nil {
		t.Fatalf("semantics: %v", d)
	}
	got, err := ParseDefinitions(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := []Definition{
		{Name: "pr-review", Description: refTo("Review"), Arguments: []Argument{{Name: "number", Type: "number", Required: refTo(true), Description: refTo("PR")}}},
		{Name: "help"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v", got)
	}
	// Round trip keeps the wire form.
	out, _ := json.Marshal(got)
	if string(out) != string(raw) {
		t.Fatalf("round trip: %s", out)
	}
	if defs, err := ParseDefinitions(nil); err != nil || defs != nil {
		t.Fatalf("nil: %v %v", defs, err)
	}
	if _, err := ParseDefinitions(json.RawMessage(`[{"name":"a","extra":1}]`)); err == nil {
		t.Fatal("unknown field accepted")
	}
}
