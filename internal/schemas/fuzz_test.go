package schemas

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzSchemaValidate compiles arbitrary schemas and validates arbitrary instances:
// nothing may panic, every call must finish quickly, and results must be deterministic
// and well formed.
func FuzzSchemaValidate(f *testing.F) {
	seeds := [][2]string{
		{`{"type":"object","required":["a"],"properties":{"a":{"type":"string","maxLength":3}},"additionalProperties":false}`, `{"a":"abcd","b":1}`},
		{`{"anyOf":[{"type":"string"},{"$ref":"#/definitions/n"}],"definitions":{"n":{"type":"number","minimum":1}}}`, `0`},
		{`{"properties":{"next":{"$ref":"#"}},"oneOf":[{"required":["x"]},{"not":{}}]}`, `{"next":{"next":{}}}`},
		{`{"items":[{"enum":[1,"a",null]}],"additionalItems":false,"uniqueItems":true}`, `[1,1]`},
		{`{"type":["string","null"],"nullable":true,"format":"date-time","pattern":"^2"}`, `"2024-01-01T00:00:00Z"`},
		{`{"$ref":"#"}`, `1`},
		{`true`, `null`},
	}
	for _, s := range seeds {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, schema, instance []byte) {
		start := time.Now()
		kw := CheckKeywords(schema, "/s")
		for _, d := range kw {
			if !strings.HasPrefix(d.Path, "/s") || d.Message == "" {
				t.Fatalf("bad keyword detail %+v", d)
			}
		}
		s, err := Compile(schema)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty compile error")
			}
			return
		}
		got := s.Validate(instance)
		for _, d := range got {
			if !strings.HasPrefix(d.Path, "/") || d.Message == "" {
				t.Fatalf("bad detail %+v", d)
			}
		}
		if again := s.Validate(instance); !reflect.DeepEqual(got, again) {
			t.Fatalf("non-deterministic: %v then %v", got, again)
		}
		if el := time.Since(start); el > 10*time.Second {
			t.Fatalf("took %v", el)
		}
	})
}

// FuzzJSRegexp: any pattern translates without panicking, a pattern without any
// special character is left as it is.
func FuzzJSRegexp(f *testing.F) {
	for _, s := range []string{`^\u00e9$`, `\uD83D\uDE00`, `\u{1F600}`, `[\s\S]`, `[^]`, `a[]`, `\cJ`, `\0`, `(?<n>a)`,
		`(?i)a`, `\pL`, `\p{Lu}`, `[[:alpha:]]`, `a\-b`, `[a\-b]`, `\`, `\u{110000}`, `\x4`, `.`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		out, err := translateJSRegexp(src)
		if err != nil {
			return
		}
		// Patterns come from JSON, so they are UTF-8.
		if utf8.ValidString(src) && !strings.ContainsAny(src, `\[](){}.^$*+?|`) && out != src {
			t.Fatalf("plain %q became %q", src, out)
		}
		if re, err := regexp.Compile(out); err == nil {
			re.MatchString(src) // compiles and runs
		}
	})
}
