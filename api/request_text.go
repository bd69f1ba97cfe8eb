package api

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/textpolicy"
)

// storedHeaders are the request headers whose values entityd stores or compares with
// stored text, with the longest value accepted. net/http already refuses control
// characters in header values; what gets through is bytes that are not UTF-8.
var storedHeaders = []struct {
	name string
	max  int
}{
	{"Content-Type", 256},
	{"Producer-Id", 256},
	{"Stream-Seq", 256},
	{"Stream-Forked-From", textpolicy.DefaultMaxPathBytes + 256},
	{"Electric-Principal", 1024},
	{"Electric-Claim-Token", 1024},
	{"Authorization", 8192},
}

// checkRequestText refuses, before any handler runs, a request whose path, query string
// or stored headers break the text policy (see internal/textpolicy): a NUL or invalid
// UTF-8 in a path parameter or a query filter would otherwise reach Postgres, which
// refuses it with an error that is not the client's to see.
func checkRequestText(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := requestTextError(r); err != nil {
			writeError(w, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func requestTextError(r *http.Request) *Error {
	if p := textpolicy.Check(r.URL.Path, textpolicy.Name); p != "" {
		return httpx.BadRequest("The request path " + p)
	}
	if r.URL.RawQuery != "" {
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			return httpx.BadRequest("The query string is not valid URL encoding")
		}
		for k, vs := range q {
			if p := textpolicy.Check(k, textpolicy.Name); p != "" {
				return httpx.BadRequest("A query parameter name " + p)
			}
			for _, v := range vs {
				if p := textpolicy.Check(v, textpolicy.Name); p != "" {
					return httpx.BadRequest(fmt.Sprintf("Query parameter %q %s", textpolicy.Sanitize(k, 64), p))
				}
			}
		}
	}
	for _, h := range storedHeaders {
		for _, v := range r.Header.Values(h.name) {
			if len(v) > h.max {
				return httpx.BadRequest(fmt.Sprintf("Header %s must be at most %d bytes", h.name, h.max))
			}
			if p := textpolicy.Check(v, textpolicy.Text); p != "" { // Text: HTAB is legal in headers
				return httpx.BadRequest("Header " + h.name + " " + p)
			}
		}
	}
	return nil
}
