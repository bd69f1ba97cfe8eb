package streamdb

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/pgtest"
)

// Every test runs against a real, freshly migrated Postgres database (pgtest); nothing
// here is mocked.
func TestMain(m *testing.M) { pgtest.Main(m) }

// testCtx is a context for one test, bounded so that a hang fails instead of stalling.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newStore opens a Store on a fresh database. The background sweeper is off unless the
// options ask for it, so that tests decide when expired streams go away.
func newStore(t *testing.T, opts ...Options) *Store {
	t.Helper()
	return openStore(t, pgtest.Pool(t), opts...)
}

// openStore opens a Store on pool and closes it when the test ends (before the pool).
func openStore(t *testing.T, pool *pgxpool.Pool, opts ...Options) *Store {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.SweepInterval == 0 {
		o.SweepInterval = -1
	}
	s, err := Open(context.Background(), pool, o)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// openPool opens another pool on the database at dsn (a second "process").
func openPool(t *testing.T, dsn string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

func msgs(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func create(t *testing.T, s *Store, path string, cfg CreateConfig, initial ...string) *Meta {
	t.Helper()
	m, created, err := s.Create(testCtx(t), path, cfg, msgs(initial...))
	require.NoError(t, err)
	require.True(t, created, "stream %s already existed", path)
	return m
}

func appendMsgs(t *testing.T, s *Store, path string, data ...string) AppendResult {
	t.Helper()
	res, err := s.Append(testCtx(t), &AppendRequest{Path: path, Messages: msgs(data...)})
	require.NoError(t, err)
	return res
}

func lookup(t *testing.T, s *Store, path string) *Meta {
	t.Helper()
	m, err := s.Lookup(testCtx(t), path)
	require.NoError(t, err)
	return m
}

// readFrom reads everything after from up to the stream's current tail, page by page,
// checking on the way that pages are contiguous and never empty.
func readFrom(t *testing.T, s *Store, path string, from Offset) []Message {
	t.Helper()
	ctx := testCtx(t)
	m := lookup(t, s, path)
	var out []Message
	for from.Seq < m.Tail.Seq {
		page, err := s.Read(ctx, m, from, m.Tail)
		require.NoError(t, err)
		require.NotEmpty(t, page, "a read before the tail returned nothing (from %v, tail %v)", from, m.Tail)
		for _, msg := range page {
			require.Equal(t, from.Seq+1, msg.End.Seq, "messages are not contiguous")
			require.Equal(t, from.Pos+int64(len(msg.Data)), msg.End.Pos, "positions do not add up")
			from = msg.End
		}
		out = append(out, page...)
	}
	require.Equal(t, m.Tail, from, "reading to the tail must end exactly at the tail")
	return out
}

func readAll(t *testing.T, s *Store, path string) []Message { return readFrom(t, s, path, Start) }

// datas returns the payloads of msgs as strings.
func datas(msgs []Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Data)
	}
	return out
}

func off(seq, pos int64) Offset { return Offset{Seq: seq, Pos: pos} }

func ptr[T any](v T) *T { return &v }

// countRows counts rows of the streams / stream_messages tables for direct checks.
func countRows(t *testing.T, s *Store, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, s.DB().QueryRow(testCtx(t), sql, args...).Scan(&n))
	return n
}

// recv receives from ch, failing the test when nothing arrives in time, so that a missed
// wake-up fails in seconds instead of hanging the suite.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(15 * time.Second):
		t.Fatal("nothing arrived within 15s")
		panic("unreachable")
	}
}
