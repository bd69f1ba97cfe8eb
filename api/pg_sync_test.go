package api_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// pgExec runs SQL on a test database (an application's table and its rows).
func pgExec(t *testing.T, dbURL, sql string, args ...any) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql, args...)
	require.NoError(t, err, sql)
}

// dropPgSyncSlotsAtEnd drops the database's replication slots when the test ends; call
// it before starting the server, so that it runs after the server stopped (a database
// with a slot cannot be dropped).
func dropPgSyncSlotsAtEnd(t *testing.T, dbURL string) {
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		_, _ = conn.Exec(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = current_database()`)
	})
}
