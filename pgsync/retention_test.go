package pgsync_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/metrics"
	"github.com/entityd/entityd/internal/pgcluster"
	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/migrations"
)

// keepMB is the test cluster's max_slot_wal_keep_size.
const keepMB = 16

// TestRetainedWALIsBoundedWhileStopped: while no server runs, the slot holds back at
// most max_slot_wal_keep_size of WAL however much the database writes (Postgres
// invalidates it at the next checkpoint); the next server finds the slot lost, counts
// it, makes a new one and delivers changes again. The metric of retained bytes is
// sampled by the server holding the slot.
func TestRetainedWALIsBoundedWhileStopped(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Postgres cluster of its own")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tmp, err := pgcluster.MkdirTemp("", "entityd-pgsync-wal-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	cluster, err := pgcluster.Start(ctx, pgcluster.Options{DataDir: filepath.Join(tmp, "pg"), Database: "entityd",
		Settings: map[string]string{"max_slot_wal_keep_size": "16MB"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cluster.Stop(context.Background()) })
	dbURL := cluster.URL()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	_, err = migrations.Up(ctx, conn)
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))
	exec(t, dbURL, ordersTable)
	exec(t, dbURL, `CREATE TABLE filler (v text)`)

	s1 := testserver.Start(t, testserver.Options{DBURL: dbURL, QuietLogs: true, PgSync: options("public.orders")})
	_, stream := register(t, s1, "", `{"options":{"table":"orders"}}`)
	url := spawnWatcher(t, s1, "", "w1", stream)
	exec(t, dbURL, `INSERT INTO orders (id, item) VALUES (1, 'a')`)
	testwait.Until(t, "the first wake", func() bool { return len(wakes(t, s1, "", url)) == 1 }, 10*time.Second)
	testwait.Until(t, "the metric sampled", func() bool { return testutil.ToFloat64(metrics.PgSyncHolding) == 1 }, 5*time.Second)
	s1.Stop()

	// six WAL segments (96 MiB of WAL positions) while nobody streams, then a checkpoint
	for range 6 {
		exec(t, dbURL, `INSERT INTO filler VALUES ('x')`)
		exec(t, dbURL, `SELECT pg_switch_wal()`)
	}
	exec(t, dbURL, `CHECKPOINT`)
	var status string
	var retained *int64
	require.NoError(t, s1Pool(t, dbURL).QueryRow(ctx, `SELECT wal_status, pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint
		FROM pg_replication_slots WHERE database = current_database()`).Scan(&status, &retained))
	require.Equal(t, "lost", status, "Postgres gave up the slot's WAL beyond max_slot_wal_keep_size")
	require.Nil(t, retained, "a lost slot holds no WAL")

	before := testutil.ToFloat64(metrics.PgSyncInvalidations)
	s2 := testserver.Start(t, testserver.Options{DBURL: dbURL, QuietLogs: true, PgSync: options("public.orders")})
	testwait.Until(t, "the lost slot made again", func() bool {
		return testutil.ToFloat64(metrics.PgSyncInvalidations) == before+1
	}, 10*time.Second)
	exec(t, dbURL, `INSERT INTO orders (id, item) VALUES (2, 'b')`)
	testwait.Until(t, "the next wake", func() bool { return len(wakes(t, s2, "", url)) == 2 }, 10*time.Second)
	require.NoError(t, s1Pool(t, dbURL).QueryRow(ctx, `SELECT wal_status FROM pg_replication_slots WHERE database = current_database()`).Scan(&status))
	require.Equal(t, "reserved", status)
	testwait.Until(t, "retained WAL sampled and small", func() bool {
		v := testutil.ToFloat64(metrics.PgSyncRetainedWAL)
		return v > 0 && v < keepMB<<20
	}, 10*time.Second)
}

func s1Pool(t *testing.T, dbURL string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// TestIdleSlotIsDropped: an observation nobody registers again goes after SourceIdle,
// and with no observation left the slot goes after SlotIdle: it holds no WAL while
// nothing is observed. A new registration makes it again.
func TestIdleSlotIsDropped(t *testing.T) {
	dbURL := pgtest.URL(t)
	dropSlotsAtEnd(t, dbURL)
	exec(t, dbURL, ordersTable)
	opts := options("public.orders")
	opts.SourceIdle, opts.SlotIdle = time.Second, 100*time.Millisecond
	s := testserver.Start(t, testserver.Options{DBURL: dbURL, QuietLogs: true, PgSync: opts})
	register(t, s, "", `{"options":{"table":"orders"}}`)
	slots := func() int {
		var n int
		require.NoError(t, s.Pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_replication_slots WHERE database = current_database()`).Scan(&n))
		return n
	}
	require.Equal(t, 1, slots())
	testwait.Until(t, "the idle slot dropped", func() bool { return slots() == 0 }, 15*time.Second)
	register(t, s, "", `{"options":{"table":"orders"}}`)
	require.Equal(t, 1, slots(), "a registration makes the slot again before it answers")
}
