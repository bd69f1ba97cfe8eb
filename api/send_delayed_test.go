package api_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/clock"
	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/internal/testwait"
)

// setupOnClock is setup for a server that keeps time with a test clock: delayed sends
// and schedules come due when the test advances it.
func setupOnClock(t *testing.T, opts ...testserver.Options) (*harness, *clock.Test) {
	t.Helper()
	t.Parallel()
	// after the parallel test's pause: the clock starts at the wall time, as the
	// database's stamps do
	clk := clock.NewTest(time.Now())
	var o testserver.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	o.Streams.Clock = clk
	return &harness{t: t, srv: testserver.Start(t, o)}, clk
}

// waitInbox waits until url's stream holds n inbox events.
func (h *harness) waitInbox(url string, n int) []event {
	h.t.Helper()
	var inbox []event
	testwait.Until(h.t, "the delayed send fires", func() bool {
		inbox = ofType(h.events(url), "inbox")
		return len(inbox) >= n
	})
	return inbox
}

// TestDelayedSendFiresLater: afterMs > 0 answers 204 with no body, appends nothing now,
// and appends the message (payload byte for byte, type, mode) once due.
func TestDelayedSendFiresLater(t *testing.T) {
	h, clk := setupOnClock(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "later", nil)
	const payload = `{ "source": "/search later",  "nodes": [{"kind":"slash_command","start":0,"end":7,"raw":"/search","name":"search"}] }`

	sent := clk.Now()
	r := h.send("/chat/later", `{"type":"composer_input","afterMs":400,"payload":`+payload+`}`)
	require.Equal(t, http.StatusNoContent, r.Status, "body: %s", r.Body)
	require.Empty(t, r.Body)
	require.Empty(t, ofType(h.events("/chat/later"), "inbox"), "nothing is appended before it is due")
	var due time.Time
	require.NoError(t, h.srv.Pool.QueryRow(context.Background(),
		`SELECT fire_at FROM delayed_sends WHERE entity_url = '/chat/later'`).Scan(&due))
	require.Equal(t, sent.Add(400*time.Millisecond), due, "due afterMs after the request")
	clk.Advance(399 * time.Millisecond)
	require.Empty(t, ofType(h.events("/chat/later"), "inbox"), "nor a millisecond before")

	clk.Advance(time.Millisecond)
	ev := h.waitInbox("/chat/later", 1)[0]
	require.Equal(t, payload, string(ev.Value["payload"]), "payload byte for byte")
	require.Equal(t, "composer_input", str(t, ev.Value["message_type"]))
	require.Equal(t, "immediate", str(t, ev.Value["mode"]))
	require.Regexp(t, `^scheduled-task-\d+$`, ev.Key, "the default key names the delayed send")
	fired := requireISOTime(t, ev.Value["timestamp"])
	require.WithinDuration(t, due, fired, time.Millisecond, "the timestamp is the firing's, not the request's (%s)", sent)

	// Fired once: no delayed send is left to fire, and one message arrived.
	h.waitNoPendingDelayed("/chat/later")
	require.Len(t, ofType(h.events("/chat/later"), "inbox"), 1)
}

// TestDelayedSendsAreValidatedNow: a delayed send gets the same refusals as a send, at
// once, and a refused one never fires.
func TestDelayedSendsAreValidatedNow(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"typed","description":"d","inbox_schemas":{"note":{"type":"object","required":["text"]}}}`)
	h.mustSpawn("typed", "v", nil)

	requireValidationFailed(t, h.send("/typed/v", `{"type":"composer_input","afterMs":50,"payload":{"source":"ab","nodes":[{"kind":"file","start":0,"end":3,"raw":"ab","path":"x"}]}}`),
		detail{"/nodes/0/end", "must be within source"})
	requireError(t, h.send("/typed/v", `{"type":"unknown","afterMs":50,"payload":{}}`),
		http.StatusUnprocessableEntity, "UNKNOWN_MESSAGE_TYPE", "Unknown message type: unknown")
	r := h.send("/typed/v", `{"type":"note","afterMs":50,"payload":{}}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, "body: %s", r.Body)
	requireDetails(t, h.send("/typed/v", `{"afterMs":50}`), http.StatusBadRequest, "INVALID_REQUEST", "Missing required field: payload")
	requireSchemaMismatch(t, h.send("/typed/v", `{"afterMs":1e999,"payload":1}`), detail{"/afterMs", "must be a finite number"})
	requireSchemaMismatch(t, h.send("/typed/v", `{"afterMs":31536000001,"payload":1}`),
		detail{"/afterMs", "must be at most 31536000000 (365 days)"})

	// afterMs 0 (or negative) is an ordinary send: 200 with a txid.
	require.NotEmpty(t, h.mustSend("/typed/v", `{"type":"note","afterMs":0,"payload":{"text":"now"}}`))

	h.signal("/typed/v", `{"signal":"SIGKILL"}`)
	requireError(t, h.send("/typed/v", `{"type":"note","afterMs":50,"payload":{"text":"x"}}`),
		http.StatusConflict, "NOT_RUNNING", "Entity is not accepting writes")
	require.Zero(t, h.count(`SELECT count(*) FROM delayed_sends WHERE entity_url = '/typed/v'`),
		"no refused delayed send was stored, so none can fire")
	require.Len(t, ofType(h.events("/typed/v"), "inbox"), 1, "only the immediate send was appended")
}

// TestDelayedSendToAnEntityThatEnded: the entity is killed before the send is due: nothing
// is appended, and the row is kept with the reason.
func TestDelayedSendToAnEntityThatEnded(t *testing.T) {
	h, clk := setupOnClock(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "gone", nil)
	r := h.send("/chat/gone", `{"afterMs":200,"payload":"too late"}`)
	require.Equal(t, http.StatusNoContent, r.Status, "body: %s", r.Body)
	requireStatus(t, h.signal("/chat/gone", `{"signal":"SIGKILL"}`), http.StatusOK)
	clk.Advance(200 * time.Millisecond)

	var lastError string
	testwait.Until(t, "the delayed send is completed", func() bool {
		err := h.srv.Pool.QueryRow(context.Background(), `SELECT coalesce(last_error, '') FROM delayed_sends
			WHERE entity_url = '/chat/gone' AND completed_at IS NOT NULL`).Scan(&lastError)
		if errors.Is(err, pgx.ErrNoRows) {
			return false
		}
		require.NoError(t, err)
		return true
	})
	require.Equal(t, "entity is not accepting writes", lastError)
	require.Empty(t, ofType(h.events("/chat/gone"), "inbox"))
}

// TestDelayedSendsWithAKeyAreIdempotent: the same delayed send retried with its key
// appends one message; a delayed send resumes a paused entity like a send does.
func TestDelayedSendsWithAKeyAreIdempotent(t *testing.T) {
	h, clk := setupOnClock(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "k", nil)
	requireStatus(t, h.signal("/chat/k", `{"signal":"SIGSTOP"}`), http.StatusOK)
	for range 3 {
		r := h.send("/chat/k", `{"key":"remind-1","afterMs":100,"payload":{"text":"standup"}}`)
		require.Equal(t, http.StatusNoContent, r.Status, "body: %s", r.Body)
	}
	clk.Advance(100 * time.Millisecond)
	inbox := h.waitInbox("/chat/k", 1)
	// Once the key is used, a delayed send reusing it for another message is refused now.
	r409 := h.send("/chat/k", `{"key":"remind-1","afterMs":100,"payload":{"text":"other"}}`)
	require.Equal(t, http.StatusConflict, r409.Status, "body: %s", r409.Body)
	require.Contains(t, string(r409.Body), "IDEMPOTENCY_KEY_REUSED")
	require.Equal(t, "remind-1", inbox[0].Key)
	h.waitNoPendingDelayed("/chat/k")
	require.Len(t, ofType(h.events("/chat/k"), "inbox"), 1, "three requests, one message")
	require.Equal(t, "idle", h.status("/chat/k"), "the delayed send resumed the paused entity")
}

// waitNoPendingDelayed waits until the entity has no delayed send left to fire: after
// that, nothing more can be appended by one.
func (h *harness) waitNoPendingDelayed(url string) {
	h.t.Helper()
	testwait.Until(h.t, "no delayed send of "+url+" is pending", func() bool {
		return h.count(`SELECT count(*) FROM delayed_sends WHERE entity_url = $1 AND completed_at IS NULL`, url) == 0
	})
}
