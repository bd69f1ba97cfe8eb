package shapes_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testserver"
)

// A snapshot larger than a page comes in pages that continue after the last key served;
// rows that change while the pages are read end as they are: a page brings the changes
// of the rows served before it since the previous page, and the changes after the last
// page's snapshot follow it. A where that matches nothing in a page gives an empty page
// that still continues.
func TestSnapshotInPages(t *testing.T) {
	t.Parallel()
	e := &env{t: t, srv: testserver.Start(t, testserver.Options{QuietLogs: true, ShapeSnapshotRows: 3})}
	e.mustStatus(e.do("POST", "/_electric/entity-types", `{"name":"chat","description":"d"}`), http.StatusCreated)
	e.mustStatus(e.do("POST", "/_electric/entity-types", `{"name":"task","description":"d"}`), http.StatusCreated)
	for i := 0; i < 10; i++ {
		e.mustStatus(e.do("PUT", fmt.Sprintf("/_electric/entities/chat/c%d", i), `{}`), http.StatusCreated)
	}
	e.mustStatus(e.do("PUT", "/_electric/entities/task/t1", `{}`), http.StatusCreated)

	key := func(u string) string { return `"public"."entities"/"` + u + `"` }
	rows := map[string]map[string]any{}
	first := e.shape(url.Values{"table": {"entities"}, "offset": {"-1"}})
	e.mustStatus(first, http.StatusOK)
	handle := first.header.Get("electric-handle")
	require.False(t, apply(rows, first.msgs), "a page is not up to date")
	require.Len(t, rows, 3, first.raw)
	require.Empty(t, first.header.Get("electric-up-to-date"))
	offset := first.header.Get("electric-offset")
	require.True(t, strings.HasPrefix(offset, "s"), offset)
	require.NotEmpty(t, first.header.Get("electric-schema"))

	// while the pages are read: a kill of a row served, a tag on a row not yet served,
	// a new row after the cursor, and one that sorts before it
	e.mustStatus(e.do("POST", "/_electric/entities/chat/c0/signal", `{"signal":"SIGKILL"}`), http.StatusOK)
	e.mustStatus(e.do("POST", "/_electric/entities/chat/c8/tags/team", `{"value":"x"}`), http.StatusOK)
	e.mustStatus(e.do("PUT", "/_electric/entities/chat/c99", `{}`), http.StatusCreated)
	e.mustStatus(e.do("PUT", "/_electric/entities/chat/a0", `{}`), http.StatusCreated)

	responses := 1
	deadline := time.Now().Add(10 * time.Second)
	next := func() bool {
		require.True(t, time.Now().Before(deadline), "the shape never caught up: %v", rows)
		r := e.shape(url.Values{"table": {"entities"}, "handle": {handle}, "offset": {offset}})
		e.mustStatus(r, http.StatusOK)
		require.Equal(t, handle, r.header.Get("electric-handle"))
		responses++
		offset = r.header.Get("electric-offset")
		return apply(rows, r.msgs)
	}
	for !next() {
		require.True(t, strings.HasPrefix(offset, "s"), "pages until the snapshot ends")
	}
	require.False(t, strings.HasPrefix(offset, "s"), "after the snapshot the offset is a log position")
	// 12 rows after the first page's c0..c2 (a0 sorts before the cursor): c3..c5,
	// c6..c8, then c9, c99 and t1 with the changes
	require.GreaterOrEqual(t, responses, 4)
	// changes become final once every older transaction in the cluster has ended: follow
	// until the ones made between the pages are in
	tagged := func() bool { t, _ := rows[key("/chat/c8")]["tags"].(string); return strings.Contains(t, "team") }
	for rows[key("/chat/a0")] == nil || rows[key("/chat/c0")]["status"] != "killed" || !tagged() {
		next()
	}
	// what a client holds is what the table holds
	require.Len(t, rows, 14) // with the caller's principal entity
	require.Equal(t, "killed", rows[key("/chat/c0")]["status"])
	require.JSONEq(t, `{"team":"x"}`, rows[key("/chat/c8")]["tags"].(string))
	require.NotNil(t, rows[key("/chat/c99")])
	require.NotNil(t, rows[key("/chat/a0")], "a row inserted before the cursor arrives as a change")

	// a where: pages of three rows scanned, most with nothing of the shape's
	tasks := map[string]map[string]any{}
	p := url.Values{"table": {"entities"}, "where": {"type = 'task'"}, "offset": {"-1"}}
	for {
		r := e.shape(p)
		e.mustStatus(r, http.StatusOK)
		require.True(t, strings.HasPrefix(r.raw, "["), "a page is a JSON array, also when empty: %s", r.raw)
		if apply(tasks, r.msgs) {
			break
		}
		p.Set("handle", r.header.Get("electric-handle"))
		p.Set("offset", r.header.Get("electric-offset"))
	}
	require.Len(t, tasks, 1)
	require.NotNil(t, tasks[key("/task/t1")])

	// equality on url, type or status is applied by the query (an index finds the rows):
	// one response, however many pages the table holds
	for _, w := range []string{"url = '/chat/c9'", "type IN ('task')", "status = 'killed'"} {
		r := e.shape(url.Values{"table": {"entities"}, "where": {w}, "offset": {"-1"}})
		e.mustStatus(r, http.StatusOK)
		one := map[string]map[string]any{}
		require.True(t, apply(one, r.msgs), "%s: %s", w, r.raw)
		require.Len(t, one, 1, w)
	}

	// a cursor of another shape must refetch; a broken one is a 400
	r := e.shape(url.Values{"table": {"entities"}, "where": {"type = 'chat'"}, "handle": {handle}, "offset": {first.header.Get("electric-offset")}})
	e.mustStatus(r, http.StatusConflict)
	for _, bad := range []string{"s", "s1", "s1_", "sx_YQ", "s1_***"} {
		r = e.shape(url.Values{"table": {"entities"}, "handle": {handle}, "offset": {bad}})
		e.mustStatus(r, http.StatusBadRequest)
	}
}
