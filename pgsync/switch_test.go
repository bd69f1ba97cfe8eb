package pgsync_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/pgcluster"
	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/migrations"
)

// TestHolderSwitchLosesAndRepeatsNothing: two servers on one database; the sessions of
// whichever holds the slot (its lease and its walsender) are killed while rows are
// being written, repeatedly; the slot is taken again (by either) and every row change
// reaches the stream exactly once, in commit order.
func TestHolderSwitchLosesAndRepeatsNothing(t *testing.T) {
	dbURL := pgtest.URL(t)
	dropSlotsAtEnd(t, dbURL)
	exec(t, dbURL, ordersTable)
	opts := testserver.Options{DBURL: dbURL, QuietLogs: true, PgSync: options("public.orders")}
	s1 := testserver.Start(t, opts)
	s2 := testserver.Start(t, opts)
	_, stream := register(t, s1, "", `{"options":{"table":"orders"}}`)

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	const rows = 60
	for i := range rows {
		_, err := conn.Exec(ctx, `INSERT INTO orders (id, item) VALUES ($1, 'x')`, i)
		require.NoError(t, err)
		if i%20 == 10 {
			// the holder's sessions end, as a crashed replica's do
			_, err := conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
				WHERE datname = current_database() AND pid <> pg_backend_pid() AND (backend_type = 'walsender'
				   OR pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted))`)
			require.NoError(t, err)
		}
	}
	var want []string
	for i := range rows {
		want = append(want, fmt.Sprintf(`insert "public"."orders"/"%d"`, i))
	}
	// Killing the lock holders' sessions also kills pooled connections of both servers
	// (they hold advisory locks for other leases too): a read may meet one and answer
	// 503 "retry shortly", which is what it is for, so the reads here retry.
	testwait.Until(t, "every row", func() bool {
		cs, ok := changesUnlessUnavailable(t, s2, stream)
		return ok && len(cs) >= rows
	}, 30*time.Second)
	var got []change
	testwait.Until(t, "a read of the stream", func() bool {
		var ok bool
		got, ok = changesUnlessUnavailable(t, s1, stream)
		return ok
	}, 30*time.Second)
	var ops []string
	for _, c := range got {
		ops = append(ops, c.Headers["operation"].(string)+" "+c.Key)
	}
	require.Equal(t, want, ops)
}

// TestWithoutLogicalDecoding: a server whose Postgres runs with wal_level=replica starts
// and serves; pgSync registrations are answered 503 with what to change.
func TestWithoutLogicalDecoding(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Postgres cluster of its own")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tmp, err := pgcluster.MkdirTemp("", "entityd-pgsync-nolog-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	cluster, err := pgcluster.Start(ctx, pgcluster.Options{DataDir: filepath.Join(tmp, "pg"), Database: "entityd",
		Settings: map[string]string{"wal_level": "replica"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cluster.Stop(context.Background()) })
	conn, err := pgx.Connect(ctx, cluster.URL())
	require.NoError(t, err)
	_, err = migrations.Up(ctx, conn)
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))
	exec(t, cluster.URL(), ordersTable)

	s := testserver.Start(t, testserver.Options{DBURL: cluster.URL(), QuietLogs: true, PgSync: options("public.orders")})
	status, body := s.Call(t, http.MethodGet, "/_electric/health", "")
	require.Equal(t, http.StatusOK, status, "%s", body)
	status, body = s.Call(t, http.MethodPost, "/_electric/pg-sync/register", `{"options":{"table":"orders"}}`)
	require.Equal(t, http.StatusServiceUnavailable, status, "%s", body)
	require.Contains(t, string(body), "wal_level=logical")
}

// changesUnlessUnavailable reads the stream's changes, or reports false when the server
// answered 503 (a pooled connection this test killed); any other answer but 200 fails.
func changesUnlessUnavailable(t *testing.T, s *testserver.Server, stream string) ([]change, bool) {
	t.Helper()
	status, body := call(t, s, "", http.MethodGet, stream+"?offset=-1", "")
	if status == http.StatusServiceUnavailable {
		return nil, false
	}
	require.Equal(t, http.StatusOK, status, "%s", body)
	var evs []event
	require.NoError(t, json.Unmarshal(body, &evs), "%s", body)
	return changesOf(t, evs), true
}
