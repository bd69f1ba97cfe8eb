package schemas

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/internal/validation"
)

func d(path, msg string) validation.Detail { return validation.Detail{Path: path, Message: msg} }

func mustCompile(t *testing.T, schema string) *Schema {
	t.Helper()
	s, err := Compile([]byte(schema))
	if err != nil {
		t.Fatalf("Compile(%s): %v", schema, err)
	}
	return s
}

func TestValidateNilWhenValid(t *testing.T) {
	s := mustCompile(t, `{"type":"string"}`)
	if got := s.Validate([]byte(`"x"`)); got != nil {
		t.Fatalf("want nil, got %#v", got)
	}
}

func TestValidateInvalidJSON(t *testing.T) {
	s := mustCompile(t, `{}`)
	for _, in := range []string{``, `{`, `1 2`, `{"a":}`} {
		got := s.Validate([]byte(in))
		want := validation.Details{d("/", MessageInvalidJSON)}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Validate(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestValidateHugeNumberIsNotANumber(t *testing.T) {
	// JSON.parse gives Infinity and Ajv (strictNumbers) rejects it.
	s := mustCompile(t, `{"type":"number"}`)
	want := validation.Details{d("/", "must be number")}
	if got := s.Validate([]byte(`1e400`)); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name, schema, wantSub string
	}{
		{"bad regex", `{"properties":{"a":{"pattern":"(?=a)"}}}`, `/properties/a/pattern "(?=a)" is not a supported regular expression`},
		{"unclosed regex", `{"pattern":"["}`, `/pattern "[" is not a supported regular expression`},
		{"unresolvable local ref", `{"$ref":"#/definitions/missing"}`, `$ref "#/definitions/missing" at / cannot be resolved`},
		{"unknown anchor", `{"items":{"$ref":"#nowhere"}}`, `$ref "#nowhere" at /items cannot be resolved`},
		{"remote http ref", `{"$ref":"http://example.com/schema.json"}`, `remote references are not supported`},
		{"remote https ref", `{"properties":{"a":{"$ref":"https://example.com/s#/x"}}}`, `remote references are not supported`},
		{"relative ref to another document", `{"$ref":"other.json"}`, `cannot be resolved`},
		{"file ref", `{"$ref":"file:///etc/passwd"}`, `cannot be resolved`},
		{"remote $schema", `{"$schema":"https://example.com/meta"}`, `unsupported $schema`},
		{"draft-04", `{"$schema":"http://json-schema.org/draft-04/schema#"}`, `only draft-07 is supported`},
		{"self ref", `{"$ref":"#"}`, `infinite recursion`},
		{"indirect loop", `{"allOf":[{"$ref":"#/definitions/a"}],"definitions":{"a":{"anyOf":[{"not":{"$ref":"#"}}]}}}`, `infinite recursion`},
		{"unknown type", `{"type":"strin"}`, `/type: unknown type "strin"`},
		{"bad type value", `{"properties":{"a":{"type":5}}}`, `/properties/a/type must be a type name`},
		{"negative minLength", `{"minLength":-1}`, `/minLength must be a non-negative integer`},
		{"non-schema", `5`, `must be a JSON object or boolean`},
		{"invalid JSON", `{"type":`, `invalid JSON Schema`},
		{"meta-schema checks unused definitions", `{"definitions":{"x":{"type":5}}}`, `invalid JSON Schema: at /definitions/x/type`},
		{"bad required", `{"required":"a"}`, `/required must be an array of strings`},
		{"duplicate $id", `{"definitions":{"a":{"$id":"#x"},"b":{"$id":"#x"}}}`, `$id "#x" is used twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Compile([]byte(tt.schema))
			if err == nil {
				t.Fatalf("Compile(%s) succeeded (%v), want error containing %q", tt.schema, s, tt.wantSub)
			}
			if !strings.Contains(err.Error(), tt.wantSub) {
				t.Fatalf("Compile(%s) error %q, want it to contain %q", tt.schema, err, tt.wantSub)
			}
		})
	}
}

func TestCompileAcceptsDraft07Schema(t *testing.T) {
	for _, s := range []string{
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`,
		`{"$schema":"http://json-schema.org/draft-07/schema","type":"object"}`,
		`{"properties":{"child":{"$ref":"#"}}}`,
		`{"anyOf":[{"type":"string"},{"items":{"$ref":"#"}}]}`,
		`{"x-custom":1,"patternProperties":{"^a":{}}}`,
	} {
		if _, err := Compile([]byte(s)); err != nil {
			t.Errorf("Compile(%s): %v", s, err)
		}
	}
}

// A schema whose evaluation grows exponentially must stop at the work budget.
func TestValidateIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"$ref":"#/definitions/d0","definitions":{`)
	const depth = 40
	for i := 0; i < depth; i++ {
		fmt.Fprintf(&b, `"d%d":{"anyOf":[{"$ref":"#/definitions/d%d"},{"$ref":"#/definitions/d%d"}]},`, i, i+1, i+1)
	}
	fmt.Fprintf(&b, `"d%d":{"type":"string"}}}`, depth)
	s := mustCompile(t, b.String())
	// Unbounded, this takes 2^40 steps: the guard only keeps a regression from hanging
	// the run (the result below is what shows the budget stopped it).
	done := make(chan validation.Details, 1)
	go func() { done <- s.Validate([]byte(`1`)) }()
	var got validation.Details
	select {
	case got = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("validation did not stop at its work budget")
	}
	want := validation.Details{d("/", MessageTooComplex)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got[:min(len(got), 3)], want)
	}
}

func TestValidateLargeInstance(t *testing.T) {
	s := mustCompile(t, `{"type":"array","items":{"type":"object","required":["a"],"properties":{"a":{"type":"integer"}}}}`)
	var b strings.Builder
	b.WriteString("[")
	for i := 0; i < 10000; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"a":%d}`, i)
	}
	b.WriteString("]")
	if got := s.Validate([]byte(b.String())); got != nil {
		t.Fatalf("got %v", got[:min(len(got), 3)])
	}
}

func TestDeepInstanceRejected(t *testing.T) {
	s := mustCompile(t, `{}`)
	in := strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2)
	want := validation.Details{d("/", MessageInvalidJSON)}
	if got := s.Validate([]byte(in)); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v", got)
	}
}

func TestJSNumber(t *testing.T) {
	for f, want := range map[float64]string{
		0: "0", 1: "1", -1.5: "-1.5", 0.1: "0.1", 1e20: "100000000000000000000", 1e21: "1e+21",
		1.5e300: "1.5e+300", 0.000001: "0.000001", 1e-7: "1e-7", -2.5e-10: "-2.5e-10", 123456.789: "123456.789",
	} {
		if got := jsNumber(f); got != want {
			t.Errorf("jsNumber(%v) = %q, want %q", f, got, want)
		}
	}
}

func TestJSKeyOrder(t *testing.T) {
	got := rawjson.JSKeyOrder([]string{"b", "10", "a", "2", "01", "-1", "4294967295", "0"})
	want := []string{"0", "2", "10", "b", "a", "01", "-1", "4294967295"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestConcurrentValidate(t *testing.T) {
	s := mustCompile(t, `{"type":"object","properties":{"a":{"type":"string","pattern":"^x"}},"required":["a"]}`)
	done := make(chan validation.Details)
	for i := 0; i < 16; i++ {
		go func() { done <- s.Validate([]byte(`{"a":"y"}`)) }()
	}
	want := validation.Details{d("/a", `must match pattern "^x"`)}
	for i := 0; i < 16; i++ {
		if got := <-done; !reflect.DeepEqual(got, want) {
			t.Errorf("got %v", got)
		}
	}
}

func TestDeepRecursiveInstanceIsLinear(t *testing.T) {
	s := mustCompile(t, `{"type":"object","properties":{"a":{"$ref":"#"}},"required":["a"]}`)
	const depth = 9000
	in := strings.Repeat(`{"a":`, depth) + `{}` + strings.Repeat(`}`, depth)
	start := time.Now()
	got := s.Validate([]byte(in))
	if el := time.Since(start); el > 3*time.Second {
		t.Fatalf("took %v", el)
	}
	if len(got) != 1 || got[0].Message != "must have required property 'a'" || strings.Count(got[0].Path, "/a") != depth {
		t.Fatalf("got %d details, first path length %d", len(got), len(got[0].Path))
	}
}

func TestDeepSchemaRejected(t *testing.T) {
	deep := strings.Repeat(`{"not":`, 600) + `{}` + strings.Repeat(`}`, 600)
	if _, err := Compile([]byte(deep)); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Fatalf("Compile: %v", err)
	}
	want := validation.Details{d("/s", MessageTooDeep)}
	if got := CheckKeywords([]byte(deep), "/s"); !reflect.DeepEqual(got, want) {
		t.Fatalf("CheckKeywords: %v", got)
	}
	ok := strings.Repeat(`{"not":`, 400) + `{}` + strings.Repeat(`}`, 400)
	if _, err := Compile([]byte(ok)); err != nil {
		t.Fatalf("Compile(400 levels): %v", err)
	}
}
