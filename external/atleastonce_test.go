package external_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/dssub"
	"github.com/entityd/entityd/internal/testserver"
)

// TestFailedAndLapsedWakesComeAgain: a handler that fails is woken again (the same wake,
// retried); one that accepts a wake and then goes silent loses it when the lease lapses,
// and is woken again with a higher epoch, while the lapsed wake's write token is refused.
func TestFailedAndLapsedWakesComeAgain(t *testing.T) {
	t.Parallel()
	e := &env{t: t, hooks: make(chan hook, 64)}
	e.srv = testserver.Start(t, testserver.Options{QuietLogs: true,
		Subs: dssub.Options{PollInterval: 20 * time.Millisecond, RetryBase: 20 * time.Millisecond, RetryMax: 50 * time.Millisecond}})
	var calls atomic.Int32
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		h := readHook(r)
		e.hooks <- h
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable) // the first delivery fails
			return
		}
		_, _ = w.Write([]byte(`{}`)) // accepted; the handler then goes silent
	}))
	defer rc.Close()
	e.registerType(`{"name":"flaky","description":"d"}`)
	r := e.do("PUT", "/__ds/subscriptions/flaky", `{"type":"webhook","pattern":"flaky/**","lease_ttl_ms":1000,"webhook":{"url":"`+rc.URL+`"}}`)
	require.Equal(t, http.StatusCreated, r.status, r.text())
	require.Equal(t, http.StatusCreated, e.do("PUT", "/_electric/entities/flaky/a", `{}`).status)

	failed := e.next()
	retried := e.next()
	require.Equal(t, str(failed.body["wake_id"]), str(retried.body["wake_id"]), "a failed delivery is retried as the same wake")
	require.Equal(t, str(failed.body["epoch"]), str(retried.body["epoch"]))

	wakeID, token := str(retried.body["wake_id"]), str(retried.body["token"])
	r = e.do("POST", "/_electric/wake-callbacks/"+wakeID, `{"epoch":`+str(retried.body["epoch"])+`,"wakeId":"`+wakeID+`"}`,
		"Authorization", "Bearer "+token)
	require.Equal(t, http.StatusOK, r.status, r.text())
	writeToken := r.json(t)["writeToken"].(string)

	lapsed := e.next() // no heartbeat, no done: the 1 s lease lapses
	require.NotEqual(t, wakeID, str(lapsed.body["wake_id"]))
	require.Greater(t, atoi(t, str(lapsed.body["epoch"])), atoi(t, str(retried.body["epoch"])), "woken again with a higher epoch")
	r = e.do("POST", "/flaky/a/main", `{"type":"text","key":"late","value":{},"headers":{"operation":"insert"}}`,
		"Authorization", "Bearer "+writeToken)
	require.Equal(t, http.StatusUnauthorized, r.status, "the lapsed wake's write token is fenced: %s", r.text())
	r = e.do("POST", "/_electric/wake-callbacks/"+wakeID, `{"epoch":`+str(retried.body["epoch"])+`}`, "Authorization", "Bearer "+token)
	require.Equal(t, http.StatusConflict, r.status, "a heartbeat for the lapsed wake is fenced: %s", r.text())
}
