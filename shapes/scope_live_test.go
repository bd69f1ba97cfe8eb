package shapes_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/internal/testserver"
)

// TestLiveShapeWakesOnlyForWhatTheCallerSees: in jwt mode a live long-poll answers
// early only for a change the caller may see. Another principal's spawns and kills
// while bob waits leave his long-poll waiting until its timeout, which then answers up
// to date with no rows (when it answers is no signal of another tenant's activity),
// from an offset past those changes (they are not read again); a change to bob's own
// entity answers at once.
func TestLiveShapeWakesOnlyForWhatTheCallerSees(t *testing.T) {
	t.Parallel()
	const longPoll = 3 * time.Second
	key := testserver.NewJWTKey(t)
	e := &env{t: t, srv: testserver.Start(t, testserver.Options{QuietLogs: true, Admins: []string{"user:root"},
		API: api.Config{Auth: key.Auth, LongPollTimeout: longPoll}})}
	alice, bob, root := key.Token(t, "user:alice"), key.Token(t, "user:bob"), key.Token(t, "user:root")
	e.mustStatus(e.doAs(alice, "POST", "/_electric/entity-types", `{"name":"alices","description":"d"}`), http.StatusCreated)
	e.mustStatus(e.doAs(alice, "PUT", "/_electric/entities/alices/a1", `{}`), http.StatusCreated)
	e.mustStatus(e.doAs(bob, "POST", "/_electric/entity-types", `{"name":"bobs","description":"d"}`), http.StatusCreated)
	e.mustStatus(e.doAs(bob, "PUT", "/_electric/entities/bobs/b1", `{}`), http.StatusCreated)

	shape := func(token string, p url.Values) reply {
		t.Helper()
		r := e.doAs(token, "GET", "/_electric/electric/v1/shape?"+p.Encode(), "")
		e.mustStatus(r, http.StatusOK)
		return r
	}
	first := shape(bob, url.Values{"table": {"entities"}, "offset": {"-1"}})
	handle, offset := first.header.Get("electric-handle"), first.header.Get("electric-offset")
	rows := map[string]map[string]any{}
	for up := apply(rows, first.msgs); !up; {
		r := shape(bob, url.Values{"table": {"entities"}, "handle": {handle}, "offset": {offset}})
		up, offset = apply(rows, r.msgs), r.header.Get("electric-offset")
	}
	// bob's entity and his principal entity (made by his first spawn)
	require.ElementsMatch(t, []string{`"public"."entities"/"/bobs/b1"`, `"public"."entities"/"/principal/user%3Abob"`}, keysOf(rows))

	type answer struct {
		r       reply
		elapsed time.Duration
	}
	live := func(token, from string) <-chan answer {
		got := make(chan answer, 1)
		go func() {
			start := time.Now()
			r := e.doAs(token, "GET", "/_electric/electric/v1/shape?"+url.Values{"table": {"entities"},
				"handle": {handle}, "offset": {from}, "live": {"true"}}.Encode(), "")
			got <- answer{r, time.Since(start)}
		}()
		return got
	}

	// alice works while bob waits (or just before: either way the changes are after
	// bob's offset)
	waiting := live(bob, offset)
	e.mustStatus(e.doAs(alice, "PUT", "/_electric/entities/alices/a2", `{}`), http.StatusCreated)
	e.mustStatus(e.doAs(alice, "POST", "/_electric/entities/alices/a1/signal", `{"signal":"SIGKILL"}`), http.StatusOK)
	a := <-waiting
	e.mustStatus(a.r, http.StatusOK)
	require.GreaterOrEqual(t, a.elapsed, longPoll, "bob's long-poll answered early, after alice's changes: %s", a.r.raw)
	none := map[string]map[string]any{}
	require.True(t, apply(none, a.r.msgs), "a long-poll that timed out is up to date: %s", a.r.raw)
	require.Empty(t, none, a.r.raw)
	next := a.r.header.Get("electric-offset")
	require.NotEmpty(t, next)

	// bob's next offset is past alice's changes: an operator reading the same shape from
	// it sees none of them
	seen := shape(root, url.Values{"table": {"entities"}, "handle": {handle}, "offset": {next}})
	require.NotContains(t, seen.raw, "/alices/", "the offset did not move past alice's changes")

	// bob's own change wakes him at once
	waiting = live(bob, next)
	e.mustStatus(e.doAs(bob, "PUT", "/_electric/entities/bobs/b2", `{}`), http.StatusCreated)
	a = <-waiting
	e.mustStatus(a.r, http.StatusOK)
	require.Less(t, a.elapsed, longPoll, "bob's own change did not wake his long-poll")
	apply(rows, a.r.msgs)
	require.Contains(t, rows, `"public"."entities"/"/bobs/b2"`, a.r.raw)
	require.NotContains(t, a.r.raw, "/alices/")
}

func keysOf(rows map[string]map[string]any) []string {
	var out []string
	for k := range rows {
		out = append(out, k)
	}
	return out
}
