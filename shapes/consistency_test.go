package shapes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testserver"
)

// client follows one shape as Electric's client does, and checks what the protocol
// promises it: a snapshot row or an insert is a row it does not hold, an update or a
// delete one it does, and no message repeats what it already applied.
type client struct {
	e      *env
	params url.Values
	rows   map[string]map[string]any
	seen   map[string]int // messages per key
	offset string
	handle string
	// the snapshot-end that closed the snapshot: every change after it is of a
	// transaction it did not see (else the client would await that txid's change for
	// ever, or apply it twice)
	snapEnd map[string]any
}

// visibleIn is Electric's isVisibleInSnapshot.
func visibleIn(txid float64, end map[string]any) bool {
	var xmin, xmax float64
	_, _ = fmt.Sscan(end["xmin"].(string), &xmin)
	_, _ = fmt.Sscan(end["xmax"].(string), &xmax)
	for _, x := range end["xip_list"].([]any) {
		var v float64
		_, _ = fmt.Sscan(x.(string), &v)
		if v == txid {
			return false
		}
	}
	return txid < xmin || txid < xmax
}

func newClient(e *env, table string) *client {
	return &client{e: e, params: url.Values{"table": {table}}, rows: map[string]map[string]any{}, seen: map[string]int{}}
}

// next makes the next request and applies its answer; it reports the answer's messages
// and whether it was up to date.
func (c *client) next() (reply, bool) {
	c.e.t.Helper()
	p := url.Values{}
	for k, v := range c.params {
		p[k] = v
	}
	if c.offset == "" {
		p.Set("offset", "-1")
	} else {
		p.Set("offset", c.offset)
		p.Set("handle", c.handle)
	}
	r := c.e.shape(p)
	c.e.mustStatus(r, http.StatusOK)
	c.handle, c.offset = r.header.Get("electric-handle"), r.header.Get("electric-offset")
	up := false
	for _, m := range r.msgs {
		h := m["headers"].(map[string]any)
		if h["control"] == "snapshot-end" {
			require.Nil(c.e.t, c.snapEnd, "one snapshot-end per snapshot: %s", r.raw)
			c.snapEnd = h
			continue
		}
		if h["control"] == "up-to-date" {
			up = true
			continue
		}
		key := m["key"].(string)
		c.seen[key]++
		if c.snapEnd != nil { // a change after the snapshot
			txids, _ := h["txids"].([]any)
			require.Len(c.e.t, txids, 1, "a change names its transaction: %s", r.raw)
			require.False(c.e.t, visibleIn(txids[0].(float64), c.snapEnd), "a change after the snapshot is of a transaction it did not see: %v after %v", txids, c.snapEnd)
		}
		row, held := c.rows[key]
		switch op := h["operation"]; op {
		case "insert":
			require.False(c.e.t, held, "an insert of %s, which the client holds: %s", key, r.raw)
			row = map[string]any{}
			c.rows[key] = row
		case "update":
			require.True(c.e.t, held, "an update of %s, which the client does not hold: %s", key, r.raw)
		case "delete":
			require.True(c.e.t, held, "a delete of %s, which the client does not hold: %s", key, r.raw)
			delete(c.rows, key)
			continue
		default:
			c.e.t.Fatalf("operation %v: %s", op, r.raw)
		}
		for k, v := range m["value"].(map[string]any) {
			row[k] = v
		}
	}
	return r, up
}

// until follows the shape until it holds key and is up to date.
func (c *client) until(key string) {
	c.e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, up := c.next()
		if up && c.rows[key] != nil {
			return
		}
		require.True(c.e.t, time.Now().Before(deadline), "%s never arrived: %v", key, c.rows)
	}
}

// fresh is the shape as a new client reads it now.
func (c *client) fresh() map[string]map[string]any {
	c.e.t.Helper()
	f := &client{e: c.e, params: c.params, rows: map[string]map[string]any{}, seen: map[string]int{}}
	for {
		if _, up := f.next(); up {
			return f.rows
		}
	}
}

func entityKey(u string) string { return `"public"."entities"/"` + u + `"` }

// older begins a transaction that takes a transaction id at once: while it runs, every
// transaction that commits after it is younger than the oldest one running.
func older(t *testing.T, e *env) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	tx, err := e.srv.Pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	var txid string
	require.NoError(t, tx.QueryRow(ctx, `SELECT pg_current_xact_id()::text`).Scan(&txid))
	return tx
}

func tag(t *testing.T, tx pgx.Tx, u, k, v string) {
	t.Helper()
	_, err := tx.Exec(context.Background(), `UPDATE entities SET tags = tags || jsonb_build_object($2::text, $3::text) WHERE url = $1`, u, k, v)
	require.NoError(t, err)
}

// The changes that follow a snapshot are those of the transactions it did not see. A
// transaction that committed before the snapshot but is younger than one still running
// then is in the rows already: its changes are not served again (an insert of a row the
// client holds), neither in the response nor after its offset; the running one's change
// follows once it commits.
func TestChangesFollowTheSnapshotTheyMissed(t *testing.T) {
	e := start(t)
	e.mustStatus(e.do("POST", "/_electric/entity-types", `{"name":"chat","description":"d"}`), http.StatusCreated)
	e.mustStatus(e.do("PUT", "/_electric/entities/chat/a", `{}`), http.StatusCreated)
	running := older(t, e)
	e.mustStatus(e.do("PUT", "/_electric/entities/chat/b", `{}`), http.StatusCreated)
	e.mustStatus(e.do("POST", "/_electric/entities/chat/a/tags/team", `{"value":"x"}`), http.StatusOK)

	c := newClient(e, "entities")
	first, _ := c.next()
	require.Len(t, c.rows, 3, first.raw) // a, b and the caller's principal entity
	require.Contains(t, c.rows[entityKey("/chat/a")]["tags"], "team", first.raw)

	// the transaction that was running writes and commits; a marker follows it
	tag(t, running, "/chat/b", "late", "y")
	require.NoError(t, running.Commit(context.Background()))
	e.mustStatus(e.do("PUT", "/_electric/entities/chat/m", `{}`), http.StatusCreated)
	c.until(entityKey("/chat/m"))

	require.Equal(t, map[string]int{entityKey("/chat/a"): 1, entityKey("/chat/b"): 2, entityKey("/chat/m"): 1,
		entityKey("/principal/system%3Adev-local"): 1}, c.seen,
		"a: its row; b: its row, then the change of the transaction the snapshot saw running; m: the marker; "+
			"and the caller's principal entity, made by its first spawn")
	require.Contains(t, c.rows[entityKey("/chat/b")]["tags"], "late")
	require.Equal(t, c.fresh(), c.rows)
}

// A snapshot in pages: each page is read at its own snapshot, with the changes of the
// rows served before that it sees and the previous page's did not; the changes after
// the last page's snapshot follow it. No change is served twice (an insert of a row the
// client holds, or an update its row has already), none is missed, also when a
// transaction that runs across the pages commits between them.
func TestSnapshotPagesServeEachChangeOnce(t *testing.T) {
	t.Parallel()
	e := &env{t: t, srv: testserver.Start(t, testserver.Options{QuietLogs: true, ShapeSnapshotRows: 3})}
	e.mustStatus(e.do("POST", "/_electric/entity-types", `{"name":"chat","description":"d"}`), http.StatusCreated)
	for i := 0; i < 10; i++ {
		e.mustStatus(e.do("PUT", fmt.Sprintf("/_electric/entities/chat/c%d", i), `{}`), http.StatusCreated)
	}
	running := older(t, e)
	// committed before the first page, younger than the running transaction
	e.mustStatus(e.do("POST", "/_electric/entities/chat/c1/tags/pre", `{"value":"x"}`), http.StatusOK)

	c := newClient(e, "entities")
	page := func(keys ...string) {
		t.Helper()
		r, _ := c.next()
		require.True(t, strings.HasPrefix(c.offset, "s"), "a page continues: %s", c.offset)
		for _, k := range keys {
			require.NotNil(t, c.rows[entityKey(k)], "%s after the page: %s", k, r.raw)
		}
	}
	page("/chat/c0", "/chat/c1", "/chat/c2")
	require.Contains(t, c.rows[entityKey("/chat/c1")]["tags"], "pre")

	// between the pages: a change of a row served, of one not yet served, a row after
	// the cursor and one before it
	e.mustStatus(e.do("POST", "/_electric/entities/chat/c0/tags/k", `{"value":"x"}`), http.StatusOK)
	e.mustStatus(e.do("POST", "/_electric/entities/chat/c8/tags/k", `{"value":"x"}`), http.StatusOK)
	e.mustStatus(e.do("PUT", "/_electric/entities/chat/c99", `{}`), http.StatusCreated)
	e.mustStatus(e.do("PUT", "/_electric/entities/chat/a0", `{}`), http.StatusCreated)
	page("/chat/a0", "/chat/c3", "/chat/c4", "/chat/c5")
	require.Contains(t, c.rows[entityKey("/chat/c0")]["tags"], `"k"`)

	// the running transaction changes a row served and commits
	tag(t, running, "/chat/c1", "late", "y")
	require.NoError(t, running.Commit(context.Background()))
	page("/chat/c6", "/chat/c7", "/chat/c8")
	require.Contains(t, c.rows[entityKey("/chat/c1")]["tags"], "late")
	require.Contains(t, c.rows[entityKey("/chat/c8")]["tags"], `"k"`)

	// the last page, then the changes after it, up to a marker
	c.next()
	require.False(t, strings.HasPrefix(c.offset, "s"), "after the snapshot the offset is a log offset: %s", c.offset)
	e.mustStatus(e.do("PUT", "/_electric/entities/chat/zz", `{}`), http.StatusCreated)
	c.until(entityKey("/chat/zz"))

	want := map[string]int{}
	for _, u := range []string{"a0", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9", "c99", "zz"} {
		want[entityKey("/chat/"+u)] = 1
	}
	want[entityKey("/chat/c0")] = 2                      // its row, its tag
	want[entityKey("/chat/c1")] = 2                      // its row (tagged pre), the running transaction's tag
	want[entityKey("/principal/system%3Adev-local")] = 1 // made by the caller's first spawn
	require.Equal(t, want, c.seen)
	require.Equal(t, c.fresh(), c.rows)
}

// Offsets a client cannot have been given are refused; a snapshot cursor of the earlier
// form, which could not finish its snapshot, starts again.
func TestOffsetForms(t *testing.T) {
	e := start(t)
	first := e.shape(url.Values{"table": {"entities"}, "offset": {"-1"}})
	e.mustStatus(first, http.StatusOK)
	h := first.header.Get("electric-handle")
	for _, bad := range []string{"5_0_5", "5_0_4", "5_0_9:", "5_0_9:4", "5_0_9:9", "5_0_9:7,6", "5_0_9:6,6", "5_0_x", "5_x", "s1:2:_", "s2:1:_YQ"} {
		r := e.shape(url.Values{"table": {"entities"}, "handle": {h}, "offset": {bad}})
		e.mustStatus(r, http.StatusBadRequest)
	}
	for _, good := range []string{"5_0", "5_0_9", "5_0_9:5,8", "s1:4:2_YQ"} {
		r := e.shape(url.Values{"table": {"entities"}, "handle": {h}, "offset": {good}})
		e.mustStatus(r, http.StatusOK)
	}
	r := e.shape(url.Values{"table": {"entities"}, "handle": {h}, "offset": {"s12_YQ"}})
	e.mustStatus(r, http.StatusConflict)
	var msgs []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.raw), &msgs))
	require.Equal(t, "must-refetch", msgs[0]["headers"].(map[string]any)["control"])
}
