package api

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/entityd/entityd/internal/textpolicy"
)

// FuzzParseBody: any bytes either are refused as a body or decode into members whose
// accessors never panic, and every string an accessor hands out follows the text policy
// (what a handler gets from the body can be stored anywhere).
func FuzzParseBody(f *testing.F) {
	for _, s := range []string{
		`{"type":"note","key":"k","payload":{"text":"a"}}`,
		`{"key":"a\u0000b"}`, `{"key":"\ud800"}`, "{\"key\":\"\xff\"}", `{"tags":{"a":"b","c":1}}`,
		`{"afterMs":-5}`, `{"afterMs":1e999}`, `{"a":1,"a":"\u0007"}`, `[`, ``, `null`, `{"tags":{"\u0001":"x"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := parseBody(data)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("parseBody returned a non-API error: %v", err)
			}
			return
		}
		for _, name := range []string{"type", "key", "mode", "position", "from", "a", "description"} {
			if s, ok := b.str(name); ok && !textpolicy.Valid(s, textpolicy.Name) {
				t.Fatalf("str(%q) handed out %q", name, s)
			}
			if s, ok := b.text(name); ok && !textpolicy.Valid(s, textpolicy.Text) {
				t.Fatalf("text(%q) handed out %q", name, s)
			}
		}
		for k, v := range b.stringMap("tags", maxTagKeyLength, maxTagValueLength) {
			if !textpolicy.Valid(k, textpolicy.Name) || !textpolicy.Valid(v, textpolicy.Text) || len(k) > maxTagKeyLength {
				t.Fatalf("stringMap handed out %q: %q", k, v)
			}
		}
		_, _ = b.number("afterMs")
		_, _ = b.enum("mode", "immediate", "paused")
		b.only("type", "key")
		_ = b.fail()
	})
}

// FuzzRequestText: whatever path and query a request carries, the door either refuses it
// with a 400 or lets through only text that follows the policy.
func FuzzRequestText(f *testing.F) {
	for _, s := range []string{"/v1/stream/a", "/a%00b", "/%FF", "/x?owner=%00", "/x?a=b&c=%zz", "/_electric/entities/a/b/send?x=%E2%80%8B"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		u, err := url.ParseRequestURI(target)
		if err != nil {
			return
		}
		r := &http.Request{Method: http.MethodGet, URL: u, Header: http.Header{}}
		if e := requestTextError(r); e != nil {
			if e.Status != http.StatusBadRequest {
				t.Fatalf("status %d", e.Status)
			}
			return
		}
		if !textpolicy.Valid(u.Path, textpolicy.Name) {
			t.Fatalf("path %q let through", u.Path)
		}
		q, _ := url.ParseQuery(u.RawQuery)
		for k, vs := range q {
			for _, v := range vs {
				if !textpolicy.Valid(k, textpolicy.Name) || !textpolicy.Valid(v, textpolicy.Name) {
					t.Fatalf("query %q=%q let through", k, v)
				}
			}
		}
	})
}
