package api

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// param is a route parameter, percent-decoded. chi matches on the raw path when the
// request has one (an encoded ':' or '@' in an instance id, a '/' in a message key), and
// then hands the parameter over still encoded.
func param(r *http.Request, name string) string {
	v := chi.URLParam(r, name)
	if !strings.Contains(v, "%") {
		return v
	}
	if u, err := url.PathUnescape(v); err == nil {
		return u
	}
	return v
}
