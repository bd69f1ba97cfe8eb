package schemas

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/entityd/entityd/internal/validation"
)

// The golden test runs every case of testdata/ajv-cases.json through this package and
// compares the outcome with what real Ajv says about the same schema and instance
// (testdata/ajv-golden.json). conformance/ajv-golden.mjs writes that file with the
// reference server's Ajv and options, and `make test` fails when the committed file is
// not what Ajv says, so this test needs no Node and still compares with real Ajv.
//
// Compared, after one canonical JSON encoding of both sides: whether the schema compiles
// and, when it does, validity and the details (path and message, in order) byte for
// byte. Not compared: the wording of compile errors (Ajv throws on first use of a
// schema; entityd refuses it at registration with its own 400 message).

// ajvOutcome is one case's outcome, as the golden file records it.
type ajvOutcome struct {
	Name         string             `json:"name"`
	Compiles     bool               `json:"compiles"`
	CompileError string             `json:"compileError,omitempty"`
	Valid        *bool              `json:"valid,omitempty"`
	Details      validation.Details `json:"details,omitempty"`
}

// canonical is the compared part of an outcome, encoded one way for both sides.
func (o ajvOutcome) canonical() string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	o.CompileError = ""
	if err := enc.Encode(o); err != nil {
		panic(err)
	}
	return string(bytes.TrimSpace(b.Bytes()))
}

func entitydOutcome(name string, schema, instance json.RawMessage) ajvOutcome {
	s, err := Compile(schema)
	if err != nil {
		return ajvOutcome{Name: name, Compiles: false}
	}
	details := s.Validate(instance)
	valid := details == nil
	return ajvOutcome{Name: name, Compiles: true, Valid: &valid, Details: details}
}

var (
	valid   = true
	invalid = false
)

// ajvException is a case where entityd deliberately differs from Ajv with the
// reference's options: why, and what entityd gives instead.
type ajvException struct {
	reason  string
	entityd ajvOutcome
}

const (
	formatsReason = "Ajv in strict mode without ajv-formats throws \"unknown format\" on the first send; " +
		"entityd asserts the formats it knows and ignores unknown ones (package doc, Decisions: format)"
	nullableReason = "Ajv throws at compile time; entityd ignores nullable instead (package doc, Decisions: nullable)"
	regexReason    = "RE2 has no look-around or back-references; entityd refuses such a pattern at registration " +
		"(package doc, Decisions: regular expressions)"
	ownPropertiesReason = "Ajv's data[prop] !== undefined also sees Object.prototype's members, so a required " +
		"\"constructor\" passes on {} and a declared \"toString\" is checked against a function; entityd reads " +
		"own properties only (package doc, Decisions: properties)"
	strictReason = "Ajv's strict mode throws on a keyword it would ignore; entityd's Compile ignores it too, and " +
		"registration's keyword allowlist (CheckKeywords) already refuses the keywords outside the reference's list " +
		"(package doc, Decisions: unknown keywords)"
)

func formatFails(name string) validation.Details {
	return validation.Details{{Path: "/", Message: `must match format "` + name + `"`}}
}

var ajvExceptions = map[string]ajvException{
	"format email":                     {formatsReason, ajvOutcome{Compiles: true, Valid: &invalid, Details: formatFails("email")}},
	"format email ok":                  {formatsReason, ajvOutcome{Compiles: true, Valid: &valid}},
	"format date-time":                 {formatsReason, ajvOutcome{Compiles: true, Valid: &invalid, Details: formatFails("date-time")}},
	"format uuid":                      {formatsReason, ajvOutcome{Compiles: true, Valid: &invalid, Details: formatFails("uuid")}},
	"format ipv4":                      {formatsReason, ajvOutcome{Compiles: true, Valid: &invalid, Details: formatFails("ipv4")}},
	"format ignores non-strings":       {formatsReason, ajvOutcome{Compiles: true, Valid: &valid}},
	"unknown format ignored":           {formatsReason, ajvOutcome{Compiles: true, Valid: &valid}},
	"format unknown name (Ajv strict)": {formatsReason, ajvOutcome{Compiles: true, Valid: &valid}},
	"format date-time (Ajv strict without ajv-formats)": {formatsReason, ajvOutcome{Compiles: true, Valid: &valid}},
	"format uri (Ajv strict without ajv-formats)":       {formatsReason, ajvOutcome{Compiles: true, Valid: &invalid, Details: formatFails("uri")}},
	"format email, nested (Ajv strict without ajv-formats)": {formatsReason, ajvOutcome{Compiles: true, Valid: &invalid,
		Details: validation.Details{{Path: "/e", Message: `must match format "email"`}}}},
	"nullable without type ignored":                       {nullableReason, ajvOutcome{Compiles: true, Valid: &valid}},
	"nullable false with null in type (Ajv throws)":       {nullableReason, ajvOutcome{Compiles: true, Valid: &valid}},
	"strict mode: unknown keyword":                        {strictReason, ajvOutcome{Compiles: true, Valid: &valid}},
	"strict mode: if without then or else":                {strictReason, ajvOutcome{Compiles: true, Valid: &valid}},
	"strict mode: additionalItems without an items array": {strictReason, ajvOutcome{Compiles: true, Valid: &valid}},
	"patternProperties with properties both apply": {strictReason, ajvOutcome{Compiles: true, Valid: &invalid,
		Details: validation.Details{{Path: "/ax", Message: "must NOT have more than 1 characters"}}}},
	"pattern: look-ahead": {regexReason, ajvOutcome{Compiles: false}},
	"required: __proto__ and constructor": {ownPropertiesReason, ajvOutcome{Compiles: true, Valid: &invalid,
		Details: validation.Details{{Path: "/", Message: "must have required property 'constructor'"},
			{Path: "/", Message: "must have required property '__proto__'"}}}},
	"properties: key toString absent": {ownPropertiesReason, ajvOutcome{Compiles: true, Valid: &invalid,
		Details: validation.Details{{Path: "/", Message: "must have required property 'toString'"}}}},
}

type ajvCase struct {
	Name     string          `json:"name"`
	Schema   json.RawMessage `json:"schema"`
	Instance json.RawMessage `json:"instance"`
}

func readJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func TestAjvGolden(t *testing.T) {
	var corpus struct{ Cases []ajvCase }
	readJSONFile(t, "testdata/ajv-cases.json", &corpus)
	var golden struct {
		Ajv   string
		Cases []ajvOutcome
	}
	readJSONFile(t, "testdata/ajv-golden.json", &golden)
	if len(golden.Cases) != len(corpus.Cases) {
		t.Fatalf("ajv-golden.json has %d cases, ajv-cases.json %d: run `make ajv-golden`", len(golden.Cases), len(corpus.Cases))
	}
	used := map[string]bool{}
	for i, c := range corpus.Cases {
		ajv := golden.Cases[i]
		if ajv.Name != c.Name {
			t.Fatalf("case %d is %q in ajv-cases.json, %q in ajv-golden.json: run `make ajv-golden`", i, c.Name, ajv.Name)
		}
		t.Run(c.Name, func(t *testing.T) {
			got := entitydOutcome(c.Name, c.Schema, c.Instance).canonical()
			if exc, ok := ajvExceptions[c.Name]; ok {
				used[c.Name] = true
				exc.entityd.Name = c.Name
				if got != exc.entityd.canonical() {
					t.Errorf("schema %s, instance %s:\n entityd   %s\n exception %s", c.Schema, c.Instance, got, exc.entityd.canonical())
				}
				if ajv.canonical() == exc.entityd.canonical() {
					t.Errorf("Ajv now says what entityd says (%s); remove the exception", got)
				}
				return
			}
			if want := ajv.canonical(); got != want {
				t.Errorf("schema %s, instance %s:\n entityd %s\n Ajv     %s", c.Schema, c.Instance, got, want)
			}
		})
	}
	for name := range ajvExceptions {
		if !used[name] {
			t.Errorf("exception %q names no case of ajv-cases.json", name)
		}
	}
}
