package api_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServeEndpointDiscovery: a registration with only a name and serve_endpoint PUTs
// the endpoint and registers the manifest it answers; a manifest for another name, an
// endpoint that fails or cannot be reached, and a private address are refused.
func TestServeEndpointDiscovery(t *testing.T) {
	h := setup(t)
	var puts int
	manifest := `{"name":"served","description":"from the endpoint","creation_schema":{"type":"object"},
		"inbox_schemas":{"ping":{"type":"object"}}}`
	ep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		puts++
		if r.Method != http.MethodPut {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		switch r.URL.Path {
		case "/ok":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(manifest))
		case "/other":
			_, _ = w.Write([]byte(`{"name":"someone-else","description":"x"}`))
		case "/garbage":
			_, _ = w.Write([]byte(`<html>`))
		default:
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer ep.Close()

	r := h.do(http.MethodPost, "/_electric/entity-types", `{"name":"served","serve_endpoint":"`+ep.URL+`/ok"}`)
	requireStatus(t, r, http.StatusCreated)
	got := h.do(http.MethodGet, "/_electric/entity-types/served", nil).object(t)
	require.Equal(t, `"from the endpoint"`, string(got["description"]))
	require.Equal(t, `"`+ep.URL+`/ok"`, string(got["serve_endpoint"]))
	require.JSONEq(t, `{"ping":{"type":"object"}}`, string(got["inbox_schemas"]))
	require.Equal(t, 1, puts)

	requireError(t, h.do(http.MethodPost, "/_electric/entity-types", `{"name":"served","serve_endpoint":"`+ep.URL+`/other"}`),
		http.StatusBadRequest, "SERVE_ENDPOINT_NAME_MISMATCH", `The serve endpoint's manifest is for type "someone-else", not "served"`)
	for _, path := range []string{"/fail", "/garbage"} {
		r = h.do(http.MethodPost, "/_electric/entity-types", `{"name":"served","serve_endpoint":"`+ep.URL+path+`"}`)
		require.Equal(t, http.StatusBadGateway, r.Status, "%s: %s", path, r.Body)
		require.Contains(t, string(r.Body), "SERVE_ENDPOINT_UNREACHABLE")
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	r = h.do(http.MethodPost, "/_electric/entity-types", `{"name":"served","serve_endpoint":"`+closed.URL+`"}`)
	require.Equal(t, http.StatusBadGateway, r.Status, string(r.Body))
	r = h.do(http.MethodPost, "/_electric/entity-types", `{"name":"served","serve_endpoint":"http://10.0.0.1/x"}`)
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
	require.Contains(t, string(r.Body), "serve_endpoint: http is only allowed for localhost")

	// a registration with a description keeps serve_endpoint as data, without a call
	before := puts
	requireStatus(t, h.do(http.MethodPost, "/_electric/entity-types",
		`{"name":"plain","description":"d","serve_endpoint":"`+ep.URL+`/fail"}`), http.StatusCreated)
	require.Equal(t, before, puts)
}
