package api_test

import (
	"context"
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

// Ready means "can commit now": 200 on the primary, 503 once the database is gone or a
// shutdown began, with the reason.
func TestReadyMeansCanCommit(t *testing.T) {
	h := setup(t, testserverQuiet())
	r := h.do(http.MethodGet, "/_electric/ready", nil)
	require.Equal(t, http.StatusOK, r.Status)
	require.JSONEq(t, `{"status":"ready"}`, string(r.Body))

	// a read-only database (what a standby is) cannot commit a transaction ID
	_, err := h.srv.Pool.Exec(context.Background(), "ALTER DATABASE "+dbName(t, h)+" SET default_transaction_read_only = on")
	require.NoError(t, err)
	h.srv.Pool.Reset() // new connections take the setting
	r = h.do(http.MethodGet, "/_electric/ready", nil)
	require.Equal(t, http.StatusServiceUnavailable, r.Status)
	require.JSONEq(t, `{"status":"unavailable","reason":"cannot commit"}`, string(r.Body))
	r = h.do(http.MethodGet, "/_electric/health", nil)
	require.Equal(t, http.StatusOK, r.Status, "health only says Postgres is reachable")

	h.srv.API.Shutdown()
	r = h.do(http.MethodGet, "/_electric/ready", nil)
	require.Equal(t, http.StatusServiceUnavailable, r.Status)
	require.JSONEq(t, `{"status":"unavailable","reason":"shutting down"}`, string(r.Body))
}

func dbName(t *testing.T, h *harness) string {
	var name string
	require.NoError(t, h.srv.Pool.QueryRow(context.Background(), "SELECT current_database()").Scan(&name))
	return `"` + name + `"`
}
