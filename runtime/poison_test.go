package runtime_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/runtime"
	"github.com/entityd/entityd/wake"
)

// odd is composer text no jsonb column can hold: \u0000 and lone surrogates.
const odd = `"nul \u0000 lone \ud800 low \udfff pair \ud83d\ude00"`

// TestOddHeldMessageDoesNotWedge: a paused composer_input whose text holds \u0000 and
// lone surrogates is held, released, and handled with its payload byte for byte; the
// messages around it are handled too. (Held messages lived in a jsonb column that
// refused such text, and every delivery attempt of the entity failed on it for ever.)
func TestOddHeldMessageDoesNotWedge(t *testing.T) {
	rec := &recorder{}
	def := runtime.EntityDefinition{Type: "composer", Handler: func(ctx *runtime.Context) error { rec.add(ctx); return nil }}
	e := startServer(t, wake.Options{}, false, def)
	url := e.spawn("composer", "c", nil)
	composer := `{"source":` + odd + `,"nodes":[]}`

	e.send(url, `{"type":"composer_input","key":"held","mode":"paused","payload":`+composer+`}`)
	e.send(url, `{"type":"composer_input","key":"after-1","payload":`+composer+`}`)
	rec.waitKey(t, url, "after-1", 10*time.Second)
	testwait.Until(t, "the odd message is held", func() bool { return e.wakeStatus(url).Paused == 1 }, 5*time.Second)

	r := e.do(http.MethodPatch, entitiesPath+url+"/inbox/held", `{"mode":"queued"}`)
	require.Equal(t, http.StatusOK, r.Status, "release: %s", r.Body)
	held := rec.waitKey(t, url, "held", 10*time.Second).Wake.(runtime.InboxWake)
	require.Contains(t, string(held.Payload), odd, "the handler gets the text byte for byte")

	e.send(url, map[string]any{"key": "after-2", "payload": "go"})
	rec.waitKey(t, url, "after-2", 10*time.Second)
	require.Equal(t, []string{"after-1", "held", "after-2"}, rec.inboxKeys(url))
	st := e.wakeStatus(url)
	require.Empty(t, st.Failures)
	require.Nil(t, st.LastError)
	require.Zero(t, st.Paused)
}

// TestRefusedWritesArePoison: a run whose writes the database refuses (here an observed
// event type holding NUL, which no text column takes) is a failed attempt like a handler
// error: retried, then given up on with its reason in the wake status, an error event
// and the inbox row marked failed on the stream; the next message is handled. Before, it
// was retried every second for ever and nothing said why.
func TestRefusedWritesArePoison(t *testing.T) {
	rec := &recorder{}
	def := runtime.EntityDefinition{Type: "poisoner", Handler: func(ctx *runtime.Context) error {
		rec.add(ctx)
		if msg, ok := ctx.Wake.(runtime.InboxWake); ok && msg.Key == "bad" {
			return ctx.Observe(ctx.Entity.URL, "type\x00with a NUL")
		}
		return nil
	}}
	e := startServer(t, wake.Options{MaxAttempts: 3}, true, def)
	url := e.spawn("poisoner", "p", nil)
	e.send(url, map[string]any{"key": "bad", "payload": 1})
	e.send(url, map[string]any{"key": "good", "payload": 2})

	rec.waitKey(t, url, "good", 20*time.Second)
	var bad []int
	for _, s := range rec.of(url) {
		if s.key() == "bad" {
			bad = append(bad, s.Attempt)
		}
	}
	require.Equal(t, []int{1, 2, 3}, bad, "the poison run is tried MaxAttempts times, no more")

	st := e.wakeStatus(url)
	require.Len(t, st.Failures, 1)
	f := st.Failures[0]
	require.Equal(t, "bad", f.Key)
	require.Equal(t, 3, f.Attempts)
	require.Contains(t, f.Error, "the database refused what the handler wrote")
	require.NotContains(t, f.Error, "\x00")

	var evs []event // what the stream says about "bad" after it was sent
	for _, ev := range after(t, e.events(url), "inbox", "bad") {
		if ev.Type == "error" || ev.Key == "bad" {
			evs = append(evs, ev)
		}
	}
	require.Equal(t, []string{"error", "error", "error", "inbox"}, eventTypes(evs))
	require.True(t, strings.HasPrefix(evs[0].str(t, "message"), "the database refused"))
	require.Equal(t, "failed", evs[3].str(t, "status"))
	require.Zero(t, e.queryInt(`SELECT count(*) FROM wake_observations WHERE observer_url = $1`, url))
}
