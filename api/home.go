package api

import (
	"net/http"
	"strings"
)

// wantsHTML reports whether the request's Accept names text/html: a browser navigating,
// not a stream client.
func wantsHTML(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, _ := strings.Cut(part, ";")
		if strings.EqualFold(strings.TrimSpace(mt), "text/html") {
			return true
		}
	}
	return false
}
