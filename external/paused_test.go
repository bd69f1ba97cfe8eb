package external_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPausedEntityIsNotWoken: as in Electric, a paused entity's wake is not delivered;
// it is finished as done (a paused entity ignores what came: the SIGSTOP itself), and a
// send, which resumes the entity, wakes the handler from there. A runner's claim for a
// paused entity answers {"done":true}.
func TestPausedEntityIsNotWoken(t *testing.T) {
	e := startBare(t)
	e.registerType(`{"name":"chat","description":"d"}`)
	require.Equal(t, http.StatusCreated, e.do("PUT", "/_electric/entities/chat/a", `{}`).status)
	r := e.do("PUT", "/__ds/subscriptions/chat-a", `{"type":"webhook","streams":["/chat/a/main"],"webhook":{"url":"`+e.hookURL(t)+`"}}`)
	require.Equal(t, http.StatusCreated, r.status, r.text())

	r = e.do("POST", "/_electric/entities/chat/a/signal", `{"signal":"SIGSTOP"}`)
	require.Equal(t, http.StatusOK, r.status, r.text())
	require.Equal(t, "paused", e.do("GET", "/_electric/entities/chat/a", "").json(t)["status"])
	stoppedAt := e.do("GET", "/chat/a/main?offset=now", "")
	tail := stoppedAt.headers.Get("Stream-Next-Offset")
	// The SIGSTOP's wake is finished without a delivery: the stream is acknowledged to
	// the tail, and nothing is in flight.
	deadline := time.Now().Add(10 * time.Second)
	for {
		sub := e.do("GET", "/__ds/subscriptions/chat-a", "").json(t)
		st := sub["streams"].([]any)[0].(map[string]any)
		if st["acked_offset"] == tail && st["has_pending"] == false {
			break
		}
		require.True(t, time.Now().Before(deadline), "the paused entity's wake was not finished: %v", sub)
		e.do("GET", "/chat/a/main?offset="+tail+"&live=long-poll", "") // let time pass on a signal
	}
	select {
	case h := <-e.hooks:
		t.Fatalf("a paused entity was woken: %s", h.raw)
	default:
	}

	r = e.do("POST", "/_electric/entities/chat/a/send", `{"payload":"wake up","key":"m1"}`)
	require.Equal(t, http.StatusOK, r.status, r.text())
	w := e.next()
	require.Equal(t, "idle", w.body["entity"].(map[string]any)["status"], "the send resumed the entity")
	require.Equal(t, tail, str(w.body["streams"].([]any)[0].(map[string]any)["acked_offset"]))

	// A runner's claim for a paused entity.
	require.Equal(t, http.StatusCreated, e.do("POST", "/_electric/runners", `{"id":"r1"}`).status)
	e.registerType(`{"name":"pulled","description":"d","default_dispatch_policy":{"targets":[{"type":"runner","runnerId":"r1"}]}}`)
	require.Equal(t, http.StatusCreated, e.do("PUT", "/_electric/entities/pulled/p", `{}`).status)
	require.Equal(t, http.StatusOK, e.do("POST", "/_electric/entities/pulled/p/signal", `{"signal":"SIGSTOP"}`).status)
	r = e.do("POST", "/_electric/runners/r1/claim", `{}`)
	require.Equal(t, http.StatusOK, r.status, r.text())
	require.Equal(t, map[string]any{"done": true}, r.json(t))
	require.Equal(t, http.StatusNoContent, e.do("POST", "/_electric/runners/r1/claim", `{}`).status, "the wake was finished")
}
