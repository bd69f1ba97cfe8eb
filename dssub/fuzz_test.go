package dssub

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"unicode/utf8"

	"github.com/entityd/entityd/internal/textpolicy"
)

// FuzzParseCreate feeds arbitrary bodies to the subscription-create decoder (readJSON
// then parseCreate). It must never panic, and whatever it accepts must be storable and
// bounded: valid text in every field, paths that follow the stream path rule, at most
// 1000 streams.
func FuzzParseCreate(f *testing.F) {
	for _, c := range hostileCases() {
		if c.method == "PUT" && len(c.body) < 4096 {
			f.Add([]byte(c.body))
		}
	}
	f.Add([]byte(`{"type":"pull-wake","streams":["a/b"],"wake_stream":"w","description":"ok\nline"}`))
	f.Add([]byte(`{"type":"webhook","pattern":"a/*/**","webhook":{"url":"https://example.com/h"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPut, "/", bytes.NewReader(body))
		var m map[string]any
		if err := readJSON(w, r, &m); err != nil || m == nil {
			return
		}
		in, err := parseCreate(m)
		if err != nil {
			return
		}
		texts := append([]string{in.Type, in.Pattern, in.WebhookURL, in.WakeStream}, in.Streams...)
		if in.Description != nil {
			texts = append(texts, *in.Description)
		}
		for _, s := range texts {
			if !utf8.ValidString(s) || !textpolicy.Valid(s, textpolicy.Text) {
				t.Fatalf("accepted text %q", s)
			}
		}
		for _, p := range append([]string{in.WakeStream}, in.Streams...) {
			if p != "" && !validStreamPath(p) {
				t.Fatalf("accepted stream path %q", p)
			}
		}
		if in.Pattern != "" && textpolicy.CheckPath("/"+in.Pattern, maxPatternBytes+1) != "" {
			t.Fatalf("accepted pattern %q", in.Pattern)
		}
		if len(in.Streams) > maxStreamsPer {
			t.Fatalf("accepted %d streams", len(in.Streams))
		}
	})
}
