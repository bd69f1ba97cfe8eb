package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/wake"
)

// Idempotency keys are remembered for the dedupe window and no longer: a retry within it
// is the same message, after the purge the key is free again. Finished delayed sends and
// wake failures go after the history retention; anything younger stays.
func TestRetentionPurgesWhatIsOld(t *testing.T) {
	h := setup(t)
	ctx := context.Background()
	h.registerType(`{"name":"task","description":"t"}`)
	h.mustSpawn("task", "r", nil)
	url := "/task/r"
	first := h.mustSend(url, `{"type":"note","key":"old","payload":{}}`)
	require.Equal(t, first, h.mustSend(url, `{"type":"note","key":"old","payload":{}}`), "a retry within the window")
	h.mustSend(url, `{"type":"note","key":"young","payload":{}}`)
	_, err := h.srv.Pool.Exec(ctx, `UPDATE stream_dedupe SET created_at = now() - interval '25 hours' WHERE key = 'old'`)
	require.NoError(t, err)

	n, err := h.srv.Streams.PurgeDedupe(ctx, 24*time.Hour)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.NotEqual(t, first, h.mustSend(url, `{"type":"note","key":"old","payload":{}}`), "past the window the key is new")
	require.Equal(t, 3, countOf(h.events(url), "inbox"), "first, young, and old again")
	var keys []string
	rows, err := h.srv.Pool.Query(ctx, `SELECT key FROM stream_dedupe ORDER BY key`)
	require.NoError(t, err)
	for rows.Next() {
		var k string
		require.NoError(t, rows.Scan(&k))
		keys = append(keys, k)
	}
	require.Equal(t, []string{"old", "young"}, keys)

	_, err = h.srv.Pool.Exec(ctx, `INSERT INTO delayed_sends (entity_url, fire_at, request, completed_at, last_error) VALUES
		($1, now() - interval '9 days', '{}', now() - interval '8 days', 'entity not found'),
		($1, now() - interval '2 days', '{}', now() - interval '1 day', 'entity not found'),
		($1, now() + interval '1 hour', '{}', NULL, NULL)`, url)
	require.NoError(t, err)
	n, err = h.srv.Sender.PurgeDelayed(ctx, 7*24*time.Hour)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.Equal(t, int64(2), h.count(`SELECT count(*) FROM delayed_sends`))

	_, err = h.srv.Pool.Exec(ctx, `INSERT INTO wake_failures (entity_url, seq, kind, key, attempts, error, failed_at) VALUES
		($1, 1, 'inbox', 'a', 5, 'boom', now() - interval '8 days'), ($1, 2, 'inbox', 'b', 5, 'boom', now())`, url)
	require.NoError(t, err)
	n, err = wake.PurgeFailures(ctx, h.srv.Pool, 7*24*time.Hour)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.Equal(t, int64(1), h.count(`SELECT count(*) FROM wake_failures`))
}

func countOf(events []event, typ string) int {
	n := 0
	for _, e := range events {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func (h *harness) count(sql string, args ...any) int64 {
	h.t.Helper()
	var n int64
	require.NoError(h.t, h.srv.Pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}
