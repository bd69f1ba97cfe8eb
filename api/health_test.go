package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHealthFollowsTheDatabase(t *testing.T) {
	h := setup(t, testserverQuiet())
	r := h.do(http.MethodGet, "/_electric/health", nil)
	require.Equal(t, http.StatusOK, r.Status)
	require.JSONEq(t, `{"status":"ok"}`, string(r.Body))

	h.srv.Pool.Close()
	r = h.do(http.MethodGet, "/_electric/health", nil)
	require.Equal(t, http.StatusServiceUnavailable, r.Status)
	require.JSONEq(t, `{"status":"unavailable","reason":"database unreachable"}`, string(r.Body))
}
