package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRootStreamsAndTheAlias: any path outside the reserved prefixes is a plain stream,
// and /v1/stream/<p> is the same stream as /<p> (created through one name, appended and
// read through the other, deleted through the first).
func TestRootStreamsAndTheAlias(t *testing.T) {
	h := setup(t)
	r := h.do(http.MethodPut, "/plain/one", `[{"n":1}]`)
	requireStatus(t, r, http.StatusCreated)
	require.True(t, strings.HasSuffix(r.Header.Get("Location"), "/plain/one"), r.Header.Get("Location"))

	r = h.do(http.MethodPut, "/v1/stream/plain/one", `[]`)
	require.Equal(t, http.StatusOK, r.Status, "the alias names the existing stream: an idempotent re-create")
	requireStatus(t, h.do(http.MethodPost, "/v1/stream/plain/one", `{"n":2}`), http.StatusNoContent)

	for _, path := range []string{"/plain/one", "/v1/stream/plain/one"} {
		r = h.do(http.MethodGet, path+"?offset=-1", nil)
		require.Equal(t, http.StatusOK, r.Status, path)
		require.JSONEq(t, `[{"n":1},{"n":2}]`, string(r.Body), path)
	}

	r = h.do(http.MethodPut, "/v1/stream/aliased", `[]`)
	requireStatus(t, r, http.StatusCreated)
	require.True(t, strings.HasSuffix(r.Header.Get("Location"), "/v1/stream/aliased"), "Location names the stream as the client did")
	requireStatus(t, h.do(http.MethodHead, "/aliased", nil), http.StatusOK)

	// a fork may name its source through either name
	r = h.do(http.MethodPut, "/plain/fork", nil, "Stream-Forked-From", "/v1/stream/plain/one")
	requireStatus(t, r, http.StatusCreated)
	r = h.do(http.MethodGet, "/plain/fork?offset=-1", nil)
	require.JSONEq(t, `[{"n":1},{"n":2}]`, string(r.Body))

	requireStatus(t, h.do(http.MethodDelete, "/plain/fork", nil), http.StatusNoContent)
	requireStatus(t, h.do(http.MethodDelete, "/plain/one", nil), http.StatusNoContent)
	require.Equal(t, http.StatusNotFound, h.do(http.MethodGet, "/v1/stream/plain/one", nil).Status)
}

// TestReservedPrefixesAreNotStreams: /_electric and /__ds are entityd's and the
// protocol's own; no stream can be created under them.
func TestReservedPrefixesAreNotStreams(t *testing.T) {
	h := setup(t)
	for _, path := range []string{"/_electric/mine", "/__ds/mine", "/__ds", "/v1/stream/__ds/mine", "/v1/stream/_electric/x"} {
		r := h.do(http.MethodPut, path, `[]`)
		require.True(t, r.Status == http.StatusNotFound || r.Status == http.StatusBadRequest || r.Status == http.StatusMethodNotAllowed,
			"%s: %d %s", path, r.Status, r.Body)
		require.Equal(t, http.StatusNotFound, h.do(http.MethodGet, strings.TrimPrefix(path, "/v1/stream")+"?offset=-1", nil).Status, path)
	}
	requireError(t, h.do(http.MethodPut, "/v1/stream/", `[]`), http.StatusNotFound, "STREAM_NOT_FOUND", "A stream path needs a name")
}

// TestEntityShapedPathsAreReserved: /<type>/<id>/main and /<type>/<id>/slash-commands
// are created by spawning only, whether or not <type> is registered yet, so that no
// plain stream pre-empts an entity of a type registered later (issue 24, finding 6);
// an entity's stream is written with its write token.
func TestEntityShapedPathsAreReserved(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	const reserved = "Entity streams are created by spawning the entity (PUT /_electric/entities/:type/:id); /<type>/<id>/main and /<type>/<id>/slash-commands are reserved for them"
	for _, path := range []string{"/chat/x/main", "/v1/stream/chat/x/slash-commands", "/notatype/x/main", "/later/x/slash-commands"} {
		requireError(t, h.do(http.MethodPut, path, `[]`), http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", reserved)
	}
	requireStatus(t, h.do(http.MethodPut, "/notatype/x/other", `[]`), http.StatusCreated)
	requireStatus(t, h.do(http.MethodPut, "/notatype/main", `[]`), http.StatusCreated)
	requireError(t, h.do(http.MethodPut, "/runners/r1/wake", `[]`), http.StatusForbidden, "FORBIDDEN",
		"Runner wake streams are created by registering the runner (POST /_electric/runners)")

	r := h.spawn("chat", "w", nil)
	requireStatus(t, r, http.StatusCreated)
	requireError(t, h.do(http.MethodPost, "/v1/stream/chat/w/main", `{"type":"x","key":"k","value":{},"headers":{"operation":"insert"}}`),
		http.StatusUnauthorized, "UNAUTHORIZED",
		"Missing write token: appending to an entity stream needs Authorization: Bearer <X-Write-Token from spawn>")
	requireError(t, h.do(http.MethodDelete, "/chat/w/main", nil), http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED",
		"Entity streams are closed by killing the entity (DELETE /_electric/entities/:type/:id)")
	r = h.do(http.MethodGet, "/v1/stream/chat/w/main?offset=-1", nil)
	require.Equal(t, http.StatusOK, r.Status)
	require.Contains(t, string(r.Body), `"entity_created"`)
}
