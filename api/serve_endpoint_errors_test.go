package api_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/internal/testserver"
)

// TestServeEndpointFailuresSayNothingOfTheNetwork: a refused port, an unknown host, an
// endpoint that fails and one that answers something else all get the same answer,
// which names no address, port, resolver or error: discovery must not serve as a port
// scanner or a resolver for whoever registers a type.
func TestServeEndpointFailuresSayNothingOfTheNetwork(t *testing.T) {
	h := setup(t)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := strconv.Itoa(closed.Addr().(*net.TCPAddr).Port)
	require.NoError(t, closed.Close()) // nothing listens there now: connection refused
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/garbage" {
			_, _ = w.Write([]byte("<html>"))
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer failing.Close()

	var first string
	for _, endpoint := range []string{
		"http://127.0.0.1:" + port + "/x",        // refused
		"https://entityd-no-such-host.invalid/x", // no such host
		failing.URL + "/fail",                    // answers 500
		failing.URL + "/garbage",                 // answers something that is not a manifest
	} {
		r := h.do(http.MethodPost, typesPath, `{"name":"served","serve_endpoint":"`+endpoint+`"}`)
		require.Equal(t, http.StatusBadGateway, r.Status, "%s: %s", endpoint, r.Body)
		body := string(r.Body)
		require.JSONEq(t, `{"error":{"code":"SERVE_ENDPOINT_UNREACHABLE","message":"Serve endpoint unreachable"}}`, body, endpoint)
		for _, leak := range []string{"127.0.0.1", port, "invalid", "dial", "lookup", "refused", "500", "tcp"} {
			require.NotContains(t, body, leak, endpoint)
		}
		if first == "" {
			first = body
		}
		require.Equal(t, first, body, "%s answers differently", endpoint)
	}
}

// TestServeEndpointInJWTModeNeverThisMachine: a jwt-mode server, however it is
// assembled (here without cmd/server's settings), calls no serve endpoint on this
// machine: the endpoint is refused before any request.
func TestServeEndpointInJWTModeNeverThisMachine(t *testing.T) {
	key := testserver.NewJWTKey(t)
	h := setup(t, testserver.Options{API: api.Config{Auth: key.Auth}})
	var called atomic.Bool
	ep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		called.Store(true)
		_, _ = w.Write([]byte(`{"name":"served","description":"d"}`))
	}))
	defer ep.Close()
	for _, endpoint := range []string{ep.URL + "/ok", strings.Replace(ep.URL, "127.0.0.1", "localhost", 1) + "/ok"} {
		r := h.do(http.MethodPost, typesPath, `{"name":"served","serve_endpoint":"`+endpoint+`"}`,
			"Authorization", "Bearer "+key.Token(t, "user:ada"))
		require.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", endpoint, r.Body)
	}
	require.False(t, called.Load(), "the endpoint on this machine was called")
}
