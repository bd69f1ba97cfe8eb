package external_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFailingHandlerDoesNotWedgeTheEntity: a handler that keeps failing on an entity's
// work — answering 5xx, or calling done without acknowledging it — is retried with
// backoff, and after the poison-message rule's attempts (5) the work is set aside and
// recorded as an error event on the entity's stream; later messages are still handled
// and the entity is idle again.
func TestFailingHandlerDoesNotWedgeTheEntity(t *testing.T) {
	e := startBare(t)
	var failing atomic.Int32 // requests answered 500 so far
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := readHook(r)
		if str(h.body["streamPath"]) == "/flaky/a/main" && failing.Load() < 5 {
			failing.Add(1)
			http.Error(w, "handler crashed", http.StatusInternalServerError)
			return
		}
		e.hooks <- h
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(rc.Close)
	e.registerType(`{"name":"flaky","description":"d","serve_endpoint":"` + rc.URL + `/wake"}`)
	require.Equal(t, http.StatusCreated, e.do("PUT", "/_electric/entities/flaky/a", `{}`).status)

	// five 500s for the spawn's work, then it is set aside: the error event recording it
	// is the next wake's work, which the handler (now answering) gets
	w := e.next()
	require.Equal(t, int32(5), failing.Load())
	read := e.do("GET", "/flaky/a/main?offset=-1", "")
	var setAside map[string]any
	for _, ev := range decodeEvents(t, read.body) {
		if ev["type"] == "error" {
			setAside = ev["value"].(map[string]any)
		}
	}
	require.NotNil(t, setAside, "the work given up on is recorded: %s", read.body)
	require.Equal(t, false, setAside["will_retry"])
	require.Equal(t, "/flaky/a/main", setAside["stream"])
	require.EqualValues(t, 5, setAside["attempt"])
	require.Contains(t, setAside["message"], "webhook answered 500")

	callback, token, _ := e.claim(w)
	e.done(w, callback, token)
	require.Equal(t, "idle", e.status("/flaky/a"))

	// The handler now claims but ends every wake without acknowledging: after five such
	// wakes that work is set aside too, and a later message still reaches the handler.
	r := e.do("POST", "/_electric/entities/flaky/a/send", `{"payload":"poison","key":"p"}`)
	require.Equal(t, http.StatusOK, r.status, r.text())
	for i := 0; i < 5; i++ {
		w = e.next()
		require.Equal(t, "running", e.status("/flaky/a"))
		callback, token, _ := e.claim(w)
		r := e.do("POST", callback, `{"epoch":`+str(w.body["epoch"])+`,"acks":[],"done":true}`, "Authorization", "Bearer "+token)
		require.Equal(t, http.StatusOK, r.status, r.text())
	}
	// the record of the second set-aside is new work: its wake may already be running
	w = e.next()
	read = e.do("GET", "/flaky/a/main?offset=-1", "")
	errors := 0
	for _, ev := range decodeEvents(t, read.body) {
		if ev["type"] == "error" {
			errors++
			require.True(t, strings.HasPrefix(ev["key"].(string), "error-remote-"))
		}
	}
	require.Equal(t, 2, errors)
	callback, token, _ = e.claim(w)
	e.done(w, callback, token)
	require.Equal(t, "idle", e.status("/flaky/a"), "after the work given up on, the entity is idle again")

	r = e.do("POST", "/_electric/entities/flaky/a/send", `{"payload":"fine","key":"f"}`)
	require.Equal(t, http.StatusOK, r.status, r.text())
	w = e.next()
	callback, token, _ = e.claim(w)
	tail := str(w.body["streams"].([]any)[0].(map[string]any)["offset"])
	read = e.do("GET", "/flaky/a/main?offset=-1", "")
	evs := decodeEvents(t, read.body)
	last := evs[len(evs)-1]
	require.Equal(t, "inbox", last["type"])
	require.Equal(t, "f", last["key"], "the later message is the wake's work")
	require.Equal(t, tail, last["headers"].(map[string]any)["offset"], "the wake's offset is the message's")
	e.done(w, callback, token)
	require.Equal(t, "idle", e.status("/flaky/a"))
}
