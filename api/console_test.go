package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The console is served by the binary: the app for every page under its prefix (deep
// links included), its files with their types and a strict CSP, and a browser opening
// "/" is sent there while a stream client asking for "/" still gets the JSON 404.
func TestConsoleIsServed(t *testing.T) {
	h := setup(t)

	for _, path := range []string{"/_electric/console/", "/_electric/console/entities/assistant/demo", "/_electric/console/types"} {
		res := h.do("GET", path, nil)
		require.Equal(t, http.StatusOK, res.Status, path)
		require.Equal(t, "text/html; charset=utf-8", res.Header.Get("Content-Type"), path)
		require.Contains(t, string(res.Body), `<script type="module" src="/_electric/console/app.js">`, path)
		require.Contains(t, res.Header.Get("Content-Security-Policy"), "script-src 'self'", path)
		require.Equal(t, "DENY", res.Header.Get("X-Frame-Options"))
	}

	js := h.do("GET", "/_electric/console/app.js", nil)
	require.Equal(t, http.StatusOK, js.Status)
	require.Equal(t, "text/javascript; charset=utf-8", js.Header.Get("Content-Type"))
	require.Greater(t, len(js.Body), 10_000)
	etag := js.Header.Get("ETag")
	require.NotEmpty(t, etag)
	require.Equal(t, http.StatusNotModified, h.do("GET", "/_electric/console/app.js", nil, "If-None-Match", etag).Status)
	require.Equal(t, "text/css; charset=utf-8", h.do("GET", "/_electric/console/app.css", nil).Header.Get("Content-Type"))

	// a file the bundle does not have is a 404, not the app
	require.Equal(t, http.StatusNotFound, h.do("GET", "/_electric/console/app-old.js", nil).Status)

	noSlash := h.redirect("/_electric/console", "")
	require.Equal(t, http.StatusFound, noSlash.StatusCode)
	require.Equal(t, "/_electric/console/", noSlash.Header.Get("Location"))

	browser := h.redirect("/", "text/html,application/xhtml+xml,*/*;q=0.8")
	require.Equal(t, http.StatusFound, browser.StatusCode)
	require.Equal(t, "/_electric/console/", browser.Header.Get("Location"))
	for _, accept := range []string{"", "application/json", "*/*"} {
		res := h.do("GET", "/", nil, "Accept", accept)
		require.Equal(t, http.StatusNotFound, res.Status, accept)
		require.True(t, strings.HasPrefix(res.Header.Get("Content-Type"), "application/json"), accept)
	}
	// writes are not redirected
	require.NotEqual(t, http.StatusFound, h.do("POST", "/", "{}", "Accept", "text/html", "Content-Type", "application/json").Status)
}

// redirect is a GET that does not follow redirects.
func (h *harness) redirect(path, accept string) *http.Response {
	h.t.Helper()
	req, err := http.NewRequest("GET", h.srv.URL+path, nil)
	require.NoError(h.t, err)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	require.NoError(h.t, err)
	require.NoError(h.t, res.Body.Close())
	return res
}
