package api

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/entityd/entityd/internal/textpolicy"
)

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
