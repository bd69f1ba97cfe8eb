package jsonbody

import (
	"testing"

	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/textpolicy"
)

// the entity API's tag limits
const maxKey, maxValue = 256, 4096

// FuzzParse: any bytes either are refused as a body or decode into members whose
// accessors never panic, and every string an accessor hands out follows the text policy
// (what a handler gets from the body can be stored anywhere).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"type":"note","key":"k","payload":{"text":"a"}}`,
		`{"key":"a\u0000b"}`, `{"key":"\ud800"}`, "{\"key\":\"\xff\"}", `{"tags":{"a":"b","c":1}}`,
		`{"afterMs":-5}`, `{"afterMs":1e999}`, `{"a":1,"a":"\u0007"}`, `[`, ``, `null`, `{"tags":{"\u0001":"x"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Parse(data)
		if err != nil {
			if _, ok := err.(*httpx.Error); !ok {
				t.Fatalf("Parse returned a non-API error: %v", err)
			}
			return
		}
		for _, name := range []string{"type", "key", "mode", "position", "from", "a", "description"} {
			if s, ok := b.Str(name); ok && !textpolicy.Valid(s, textpolicy.Name) {
				t.Fatalf("str(%q) handed out %q", name, s)
			}
			if s, ok := b.Text(name); ok && !textpolicy.Valid(s, textpolicy.Text) {
				t.Fatalf("text(%q) handed out %q", name, s)
			}
		}
		for k, v := range b.StringMap("tags", maxKey, maxValue) {
			if !textpolicy.Valid(k, textpolicy.Name) || !textpolicy.Valid(v, textpolicy.Text) || len(k) > maxKey {
				t.Fatalf("stringMap handed out %q: %q", k, v)
			}
		}
		_, _ = b.Number("afterMs")
		_, _ = b.Enum("mode", "immediate", "paused")
		b.Only("type", "key")
		_ = b.Fail()
	})
}
