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

func TestValidateMessages(t *testing.T) {
	tests := []struct {
		name     string
		schema   string
		instance string
		want     validation.Details
	}{
		// valid
		{"valid object", `{"type":"object","required":["name"],"properties":{"name":{"type":"string"}}}`, `{"name":"x"}`, nil},
		{"empty schema", `{}`, `[1,{"a":null}]`, nil},
		{"true schema", `true`, `1`, nil},
		{"annotations only", `{"title":"t","description":"d","default":1,"$id":"http://x/y"}`, `null`, nil},
		{"integer written as 1.0", `{"type":"integer"}`, `1.0`, nil},
		{"integer in exponent form", `{"type":"integer"}`, `1e2`, nil},

		// one message of each form, root path
		{"required", `{"required":["name"]}`, `{}`, validation.Details{d("/", "must have required property 'name'")}},
		{"required, each missing in order", `{"required":["b","a","c"]}`, `{"a":1}`,
			validation.Details{d("/", "must have required property 'b'"), d("/", "must have required property 'c'")}},
		{"string", `{"type":"string"}`, `1`, validation.Details{d("/", "must be string")}},
		{"integer", `{"type":"integer"}`, `1.5`, validation.Details{d("/", "must be integer")}},
		{"number", `{"type":"number"}`, `"1"`, validation.Details{d("/", "must be number")}},
		{"boolean", `{"type":"boolean"}`, `0`, validation.Details{d("/", "must be boolean")}},
		{"null", `{"type":"null"}`, `false`, validation.Details{d("/", "must be null")}},
		{"object", `{"type":"object"}`, `[]`, validation.Details{d("/", "must be object")}},
		{"array", `{"type":"array"}`, `{}`, validation.Details{d("/", "must be array")}},
		{"type list", `{"type":["string","null"]}`, `1`, validation.Details{d("/", "must be string,null")}},
		{"minimum", `{"minimum":1}`, `0`, validation.Details{d("/", "must be >= 1")}},
		{"maximum", `{"maximum":1.5}`, `2`, validation.Details{d("/", "must be <= 1.5")}},
		{"exclusiveMaximum", `{"exclusiveMaximum":5}`, `5`, validation.Details{d("/", "must be < 5")}},
		{"exclusiveMinimum", `{"exclusiveMinimum":0}`, `0`, validation.Details{d("/", "must be > 0")}},
		{"number limits in Ajv order", `{"minimum":10,"maximum":1,"exclusiveMinimum":10,"exclusiveMaximum":1}`, `5`,
			validation.Details{d("/", "must be <= 1"), d("/", "must be >= 10"), d("/", "must be < 1"), d("/", "must be > 10")}},
		{"JS number formatting", `{"maximum":1e21,"minimum":-0.0000001}`, `1e22`, validation.Details{d("/", "must be <= 1e+21")}},
		{"JS small number formatting", `{"minimum":1e-7}`, `0`, validation.Details{d("/", "must be >= 1e-7")}},
		{"number keywords ignore other types", `{"minimum":1,"maxLength":0,"minItems":5,"required":["x"]}`, `true`, nil},
		{"maxLength", `{"maxLength":3}`, `"abcd"`, validation.Details{d("/", "must NOT have more than 3 characters")}},
		{"minLength", `{"minLength":1}`, `""`, validation.Details{d("/", "must NOT have fewer than 1 characters")}},
		{"length counts code points", `{"maxLength":2}`, `"😀é"`, nil},
		{"length counts code points (fail)", `{"maxLength":2}`, `"😀é!"`, validation.Details{d("/", "must NOT have more than 2 characters")}},
		{"pattern", `{"pattern":"^a"}`, `"ba"`, validation.Details{d("/", `must match pattern "^a"`)}},
		{"pattern is a search", `{"pattern":"b"}`, `"abc"`, nil},
		{"pattern quoted raw", `{"pattern":"^\\d+\"$"}`, `"x"`, validation.Details{d("/", `must match pattern "^\d+"$"`)}},
		{"enum", `{"enum":["a",1,null,{"x":[1]}]}`, `"b"`, validation.Details{d("/", "must be equal to one of the allowed values")}},
		{"enum deep equality", `{"enum":[{"x":[1],"y":2}]}`, `{"y":2,"x":[1.0]}`, nil},
		{"const", `{"const":{"a":1}}`, `{"a":2}`, validation.Details{d("/", "must be equal to constant")}},
		{"const null", `{"const":null}`, `null`, nil},
		{"additionalProperties", `{"properties":{"a":{}},"additionalProperties":false}`, `{"a":1,"b":2,"c":3}`,
			validation.Details{d("/", "must NOT have additional properties"), d("/", "must NOT have additional properties")}},
		{"additionalProperties schema", `{"properties":{"a":{}},"additionalProperties":{"type":"string"}}`, `{"b":1,"a":1,"2":2}`,
			validation.Details{d("/2", "must be string"), d("/b", "must be string")}},
		{"minItems", `{"minItems":1}`, `[]`, validation.Details{d("/", "must NOT have fewer than 1 items")}},
		{"maxItems", `{"maxItems":1}`, `[1,2]`, validation.Details{d("/", "must NOT have more than 1 items")}},
		{"oneOf none", `{"oneOf":[{"type":"string"},{"type":"number"}]}`, `null`,
			validation.Details{d("/", "must be string"), d("/", "must be number"), d("/", "must match exactly one schema in oneOf")}},
		{"oneOf two", `{"oneOf":[{"type":"integer"},{"type":"number"},{"type":"string"}]}`, `1`,
			validation.Details{d("/", "must be string"), d("/", "must match exactly one schema in oneOf")}},
		{"oneOf exactly one", `{"oneOf":[{"type":"integer"},{"type":"string"}]}`, `1`, nil},
		{"anyOf", `{"anyOf":[{"type":"string"},{"minimum":5}]}`, `1`,
			validation.Details{d("/", "must be string"), d("/", "must be >= 5"), d("/", "must match a schema in anyOf")}},
		{"anyOf passes", `{"anyOf":[{"type":"string"},{"minimum":0}]}`, `1`, nil},
		{"allOf", `{"allOf":[{"type":"integer"},{"minimum":5}]}`, `1.5`,
			validation.Details{d("/", "must be integer"), d("/", "must be >= 5")}},
		{"not", `{"not":{"type":"string"}}`, `"x"`, validation.Details{d("/", "must NOT be valid")}},
		{"not passes", `{"not":{"type":"string"}}`, `1`, nil},
		{"not empty", `{"not":{}}`, `1`, validation.Details{d("/", "must NOT be valid")}},
		{"format email", `{"type":"string","format":"email"}`, `"nope"`, validation.Details{d("/", `must match format "email"`)}},
		{"format email ok", `{"format":"email"}`, `"a@b.example"`, nil},
		{"format date-time", `{"format":"date-time"}`, `"2024-13-01T00:00:00Z"`, validation.Details{d("/", `must match format "date-time"`)}},
		{"format uuid", `{"format":"uuid"}`, `"123"`, validation.Details{d("/", `must match format "uuid"`)}},
		{"format ipv4", `{"format":"ipv4"}`, `"1.2.3"`, validation.Details{d("/", `must match format "ipv4"`)}},
		{"format ignores non-strings", `{"format":"email"}`, `5`, nil},
		{"unknown format ignored", `{"type":"string","format":"flavour"}`, `"x"`, nil},
		{"false schema", `false`, `1`, validation.Details{d("/", "boolean schema is false")}},
		{"false property", `{"properties":{"a":false}}`, `{"a":1}`, validation.Details{d("/a", "boolean schema is false")}},

		// nested paths
		{"nested path", `{"properties":{"a":{"items":{"properties":{"b":{"type":"string"}}}}}}`, `{"a":[{"b":"x"},{"b":1}]}`,
			validation.Details{d("/a/1/b", "must be string")}},
		{"nested required at object path", `{"properties":{"a":{"required":["z"]}}}`, `{"a":{}}`,
			validation.Details{d("/a", "must have required property 'z'")}},
		{"path escaping", `{"properties":{"a/b":{"properties":{"c~d":{"type":"null"}}}}}`, `{"a/b":{"c~d":1}}`,
			validation.Details{d("/a~1b/c~0d", "must be null")}},
		{"tuple items", `{"items":[{"type":"string"},{"type":"number"}],"additionalItems":false}`, `[1,"x",3]`,
			validation.Details{d("/", "must NOT have more than 2 items"), d("/0", "must be string"), d("/1", "must be number")}},
		{"tuple additionalItems schema", `{"items":[{}],"additionalItems":{"type":"string"}}`, `[1,2,"x"]`,
			validation.Details{d("/1", "must be string")}},
		{"$ref to $defs", `{"$ref":"#/$defs/a","$defs":{"a":{"type":"string"}}}`, `1`, validation.Details{d("/", "must be string")}},
		{"$ref to definitions", `{"properties":{"x":{"$ref":"#/definitions/a"}},"definitions":{"a":{"minimum":3}}}`, `{"x":1}`,
			validation.Details{d("/x", "must be >= 3")}},
		{"$ref siblings are applied (Ajv v8)", `{"$ref":"#/definitions/a","maximum":0,"definitions":{"a":{"minimum":3}}}`, `1`,
			validation.Details{d("/", "must be >= 3"), d("/", "must be <= 0")}},
		{"recursive schema", `{"type":"object","properties":{"v":{"type":"integer"},"next":{"$ref":"#"}}}`, `{"v":1,"next":{"v":2,"next":{"v":"x"}}}`,
			validation.Details{d("/next/next/v", "must be integer")}},
		{"$id based ref", `{"$id":"http://example.com/root.json","properties":{"b":{"$ref":"b.json"}},"definitions":{"b":{"$id":"b.json","type":"string"}}}`, `{"b":1}`,
			validation.Details{d("/b", "must be string")}},
		{"draft-07 anchor", `{"definitions":{"s":{"$id":"#str","type":"string"}},"items":{"$ref":"#str"}}`, `["a",2]`,
			validation.Details{d("/1", "must be string")}},
		{"percent-encoded pointer", `{"$ref":"#/definitions/a%20b","definitions":{"a b":{"type":"null"}}}`, `1`,
			validation.Details{d("/", "must be null")}},

		// nullable
		{"nullable allows null", `{"type":"string","nullable":true}`, `null`, nil},
		{"nullable keeps declared type message", `{"type":"string","nullable":true}`, `1`, validation.Details{d("/", "must be string")}},
		{"nullable false", `{"type":"string","nullable":false}`, `null`, validation.Details{d("/", "must be string")}},
		{"nullable does not extend enum", `{"type":"string","nullable":true,"enum":["a"]}`, `null`,
			validation.Details{d("/", "must be equal to one of the allowed values")}},
		{"nullable without type ignored", `{"nullable":true}`, `1`, nil},

		// ordering
		{"Ajv keyword order", `{"type":"object","required":["name"],"properties":{"name":{"type":"string","maxLength":3},"n":{"type":"integer","minimum":1}},"additionalProperties":false}`,
			`{"name":5,"n":0.5,"x":1}`,
			validation.Details{d("/", "must NOT have additional properties"), d("/name", "must be string"), d("/n", "must be integer"), d("/n", "must be >= 1")}},
		{"type first without group keywords", `{"type":"string","enum":["a"]}`, `5`,
			validation.Details{d("/", "must be string"), d("/", "must be equal to one of the allowed values")}},
		{"type at its group with group keywords", `{"type":"string","minLength":1,"enum":["a"]}`, `5`,
			validation.Details{d("/", "must be equal to one of the allowed values"), d("/", "must be string")}},
		{"other groups still apply before a late type error", `{"type":"object","properties":{"a":{}},"minLength":3}`, `"ab"`,
			validation.Details{d("/", "must NOT have fewer than 3 characters"), d("/", "must be object")}},
		{"properties in schema order", `{"properties":{"b":{"type":"string"},"a":{"type":"string"},"1":{"type":"string"}}}`, `{"a":1,"b":1,"1":1}`,
			validation.Details{d("/1", "must be string"), d("/b", "must be string"), d("/a", "must be string")}},

		// keywords outside the allowlist (Compile still supports them)
		{"multipleOf", `{"multipleOf":2}`, `3`, validation.Details{d("/", "must be multiple of 2")}},
		{"minProperties", `{"minProperties":2}`, `{"a":1}`, validation.Details{d("/", "must NOT have fewer than 2 properties")}},
		{"maxProperties", `{"maxProperties":0}`, `{"a":1}`, validation.Details{d("/", "must NOT have more than 0 properties")}},
		{"uniqueItems generic", `{"uniqueItems":true}`, `[{"a":1},2,{"a":1}]`, validation.Details{d("/", "must NOT have duplicate items (items ## 0 and 2 are identical)")}},
		{"uniqueItems scalar items", `{"uniqueItems":true,"items":{"type":"string"}}`, `["a","b","a"]`, validation.Details{d("/", "must NOT have duplicate items (items ## 2 and 0 are identical)")}},
		{"contains", `{"contains":{"type":"string"}}`, `[1,2]`,
			validation.Details{d("/0", "must be string"), d("/1", "must be string"), d("/", "must contain at least 1 valid item(s)")}},
		{"if then", `{"if":{"minimum":10},"then":{"multipleOf":5},"else":{"maximum":0}}`, `12`,
			validation.Details{d("/", "must be multiple of 5"), d("/", `must match "then" schema`)}},
		{"if else", `{"if":{"minimum":10},"then":{"multipleOf":5},"else":{"maximum":0}}`, `3`,
			validation.Details{d("/", "must be <= 0"), d("/", `must match "else" schema`)}},
		{"dependencies", `{"dependencies":{"a":["b","c"],"d":{"required":["e"]}}}`, `{"a":1,"d":1}`,
			validation.Details{d("/", "must have properties b, c when property a is present"), d("/", "must have properties b, c when property a is present"), d("/", "must have required property 'e'")}},
		{"propertyNames", `{"propertyNames":{"maxLength":1}}`, `{"ab":1,"c":2}`,
			validation.Details{d("/", "must NOT have more than 1 characters"), d("/", "property name must be valid")}},
		{"patternProperties", `{"patternProperties":{"^x":{"type":"string"}},"additionalProperties":false}`, `{"x1":1,"y":2}`,
			validation.Details{d("/", "must NOT have additional properties"), d("/x1", "must be string")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCompile(t, tt.schema)
			got := s.Validate([]byte(tt.instance))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Validate(%s, %s):\n got  %v\n want %v", tt.schema, tt.instance, got, tt.want)
			}
		})
	}
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
