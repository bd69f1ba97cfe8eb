package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// A send that resumes a paused entity moves it back to idle in the transaction of the
// append itself: the entity row and the inbox message carry the same transaction id, so
// no crash can leave a delivered message behind a paused entity. A paused send leaves it
// paused.
func TestSendResumesPausedEntityInItsOwnTransaction(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"task","description":"t"}`)
	h.mustSpawn("task", "p", nil)
	url := "/task/p"
	h.mustSignal(url, `{"signal":"SIGSTOP"}`)

	h.mustSend(url, `{"type":"note","key":"held","mode":"paused","payload":{}}`)
	require.Equal(t, "paused", h.status(url))

	h.mustSend(url, `{"type":"note","key":"wake-up","payload":{}}`)
	require.Equal(t, "idle", h.status(url))

	var entityXmin, messageXmin string
	ctx := context.Background()
	require.NoError(t, h.srv.Pool.QueryRow(ctx, `SELECT xmin::text FROM entities WHERE url = $1`, url).Scan(&entityXmin))
	require.NoError(t, h.srv.Pool.QueryRow(ctx, `SELECT m.xmin::text FROM stream_messages m
		JOIN entities e ON e.stream_id = m.stream_id WHERE e.url = $1 ORDER BY m.seq DESC LIMIT 1`, url).Scan(&messageXmin))
	require.Equal(t, messageXmin, entityXmin, "the un-pause committed with the message")

	// A retry of the resuming send is a duplicate: it must not resume an entity paused since.
	h.mustSignal(url, `{"signal":"SIGSTOP"}`)
	r := h.send(url, `{"type":"note","key":"wake-up","payload":{}}`)
	requireStatus(t, r, http.StatusOK)
	require.Equal(t, "paused", h.status(url))
}
