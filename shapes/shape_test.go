package shapes_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/internal/testserver"
)

type env struct {
	t   *testing.T
	srv *testserver.Server
}

func start(t *testing.T) *env {
	t.Helper()
	t.Parallel()
	return &env{t: t, srv: testserver.Start(t, testserver.Options{QuietLogs: true})}
}

type reply struct {
	status int
	header http.Header
	msgs   []map[string]any
	raw    string
}

func (e *env) do(method, path, body string) reply {
	e.t.Helper()
	return e.doAs("", method, path, body)
}

// doAs makes a request with a bearer token (none when "").
func (e *env) doAs(token, method, path, body string) reply {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	require.NoError(e.t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	r := reply{status: res.StatusCode, header: res.Header, raw: string(data)}
	_ = json.Unmarshal(data, &r.msgs)
	return r
}

func (e *env) shape(params url.Values) reply {
	e.t.Helper()
	return e.do("GET", "/_electric/electric/v1/shape?"+params.Encode(), "")
}

func (e *env) mustStatus(r reply, status int) {
	e.t.Helper()
	require.Equal(e.t, status, r.status, r.raw)
}

// rows applies a response's change messages to rows (key → value), as a client does,
// and reports whether it ended up to date.
func apply(rows map[string]map[string]any, msgs []map[string]any) bool {
	up := false
	for _, m := range msgs {
		h := m["headers"].(map[string]any)
		if c, ok := h["control"]; ok { // up-to-date, snapshot-end
			up = up || c == "up-to-date"
			continue
		}
		key := m["key"].(string)
		switch h["operation"] {
		case "insert", "update":
			row := rows[key]
			if row == nil {
				row = map[string]any{}
				rows[key] = row
			}
			for k, v := range m["value"].(map[string]any) {
				row[k] = v
			}
		case "delete":
			delete(rows, key)
		}
	}
	return up
}

// TestEntitiesShapeSnapshotThenChanges: the initial request returns every row and the
// headers the client needs; requests from the returned offset bring inserts, updates
// (a kill) and nothing else; a where keeps the shape to its rows and turns an update
// that leaves it into a delete.
func TestEntitiesShapeSnapshotThenChanges(t *testing.T) {
	e := start(t)
	e.mustStatus(e.do("POST", "/_electric/entity-types", `{"name":"chat","description":"d"}`), http.StatusCreated)
	e.mustStatus(e.do("PUT", "/_electric/entities/chat/a", `{"tags":{"team":"x"}}`), http.StatusCreated)

	all := e.shape(url.Values{"table": {"entities"}, "offset": {"-1"}})
	e.mustStatus(all, http.StatusOK)
	require.NotEmpty(t, all.header.Get("electric-handle"))
	require.NotEmpty(t, all.header.Get("electric-offset"))
	var schema map[string]map[string]any
	require.NoError(t, json.Unmarshal([]byte(all.header.Get("electric-schema")), &schema))
	require.Equal(t, "text", schema["url"]["type"])
	require.Equal(t, "jsonb", schema["tags"]["type"])
	require.NotContains(t, schema, "write_token")
	rows := map[string]map[string]any{}
	require.True(t, apply(rows, all.msgs), all.raw)
	a := rows[`"public"."entities"/"/chat/a"`]
	require.NotNil(t, a, all.raw)
	require.Equal(t, "chat", a["type"])
	require.Equal(t, "idle", a["status"])
	require.JSONEq(t, `{"team":"x"}`, a["tags"].(string), "values are text, parsed by the schema's type")
	require.NotContains(t, all.raw, "write_token")

	idle := e.shape(url.Values{"table": {"entities"}, "where": {"status = 'idle'"}, "offset": {"-1"}})
	e.mustStatus(idle, http.StatusOK)
	idleRows := map[string]map[string]any{}
	apply(idleRows, idle.msgs)
	// the idle chat entity and the caller's principal entity (made by its first spawn)
	require.Len(t, idleRows, 2)
	require.NotEqual(t, all.header.Get("electric-handle"), idle.header.Get("electric-handle"), "a where is another shape")

	// changes: a spawn and a kill
	e.mustStatus(e.do("PUT", "/_electric/entities/chat/b", `{}`), http.StatusCreated)
	e.mustStatus(e.do("POST", "/_electric/entities/chat/a/signal", `{"signal":"SIGKILL"}`), http.StatusOK)
	follow := func(handle, offset, where string) reply {
		p := url.Values{"table": {"entities"}, "handle": {handle}, "offset": {offset}}
		if where != "" {
			p.Set("where", where)
		}
		return e.shape(p)
	}
	deadline := time.Now().Add(10 * time.Second)
	offset := all.header.Get("electric-offset")
	for rows[`"public"."entities"/"/chat/b"`] == nil || rows[`"public"."entities"/"/chat/a"`]["status"] != "killed" {
		require.True(t, time.Now().Before(deadline), "changes did not arrive: %v", rows)
		r := follow(all.header.Get("electric-handle"), offset, "")
		e.mustStatus(r, http.StatusOK)
		require.NotEmpty(t, r.header.Get("electric-schema"), "non-live responses carry the schema")
		apply(rows, r.msgs)
		offset = r.header.Get("electric-offset")
	}
	require.Len(t, rows, 3) // a, b and the caller's principal entity

	offset = idle.header.Get("electric-offset")
	for idleRows[`"public"."entities"/"/chat/a"`] != nil || idleRows[`"public"."entities"/"/chat/b"`] == nil {
		require.True(t, time.Now().Before(deadline), "the idle shape did not follow: %v", idleRows)
		r := follow(idle.header.Get("electric-handle"), offset, "status = 'idle'")
		e.mustStatus(r, http.StatusOK)
		apply(idleRows, r.msgs)
		offset = r.header.Get("electric-offset")
	}
	// b and the caller's principal entity
	require.Len(t, idleRows, 2, "the killed entity left the idle shape as a delete")
}

// TestLiveLongPollWakesOnAChange: a live request at the tail waits, and answers with the
// change once it is committed.
func TestLiveLongPollWakesOnAChange(t *testing.T) {
	t.Parallel()
	// a long-poll longer than a registration takes on a busy machine
	e := &env{t: t, srv: testserver.Start(t, testserver.Options{QuietLogs: true, API: api.Config{LongPollTimeout: 10 * time.Second}})}
	first := e.shape(url.Values{"table": {"entity_types"}, "offset": {"-1"}})
	e.mustStatus(first, http.StatusOK)
	got := make(chan reply, 1)
	go func() {
		got <- e.shape(url.Values{"table": {"entity_types"}, "handle": {first.header.Get("electric-handle")},
			"offset": {first.header.Get("electric-offset")}, "live": {"true"}})
	}()
	// a registration while (or before) the request waits: either way it is in the answer
	e.mustStatus(e.do("POST", "/_electric/entity-types", `{"name":"late","description":"d"}`), http.StatusCreated)
	var r reply
	select {
	case r = <-got:
	case <-time.After(15 * time.Second):
		t.Fatal("the live request did not answer")
	}
	e.mustStatus(r, http.StatusOK)
	require.NotEmpty(t, r.header.Get("electric-cursor"))
	require.Empty(t, r.header.Get("electric-schema"))
	rows := map[string]map[string]any{}
	apply(rows, r.msgs)
	if len(rows) == 0 { // the registration became final after the first answer: follow on
		r = e.shape(url.Values{"table": {"entity_types"}, "handle": {first.header.Get("electric-handle")},
			"offset": {r.header.Get("electric-offset")}, "live": {"true"}})
		apply(rows, r.msgs)
	}
	require.Equal(t, "d", rows[`"public"."entity_types"/"late"`]["description"])
}

// TestShapeRefusals: the reference's errors for tables, where clauses and stale handles.
func TestShapeRefusals(t *testing.T) {
	e := start(t)
	code := func(r reply) string {
		var env struct {
			Error struct{ Code string } `json:"error"`
		}
		_ = json.Unmarshal([]byte(r.raw), &env)
		return env.Error.Code
	}
	r := e.shape(url.Values{"table": {"ds_keys"}, "offset": {"-1"}})
	e.mustStatus(r, http.StatusForbidden)
	require.Equal(t, "TABLE_NOT_ALLOWED", code(r))
	for _, w := range []string{"type = 'x", "(type = 'x'", "type = 'x' -- c", "type = 'x' /* c */", "type = 'x'; drop table entities",
		"nosuch = 'x'", "type = 'x' OR status = 'y'"} {
		r = e.shape(url.Values{"table": {"entities"}, "offset": {"-1"}, "where": {w}})
		e.mustStatus(r, http.StatusBadRequest)
		require.Equal(t, "INVALID_WHERE", code(r), w)
	}
	r = e.shape(url.Values{"table": {"entities"}, "offset": {"-1"}, "where": {"type = $1"}, "params[1]": {"chat"}})
	e.mustStatus(r, http.StatusOK)
	r = e.shape(url.Values{"table": {"entities"}, "offset": {"-1"}, "columns": {"type,status"}})
	e.mustStatus(r, http.StatusBadRequest)
	r = e.shape(url.Values{"table": {"entities"}, "offset": {"12"}, "handle": {"h"}})
	e.mustStatus(r, http.StatusBadRequest)

	first := e.shape(url.Values{"table": {"entities"}, "offset": {"-1"}})
	r = e.shape(url.Values{"table": {"entities"}, "offset": {first.header.Get("electric-offset")}, "handle": {"someone-elses"}})
	e.mustStatus(r, http.StatusConflict)
	require.Equal(t, first.header.Get("electric-handle"), r.header.Get("electric-handle"))
	require.Equal(t, "must-refetch", r.msgs[0]["headers"].(map[string]any)["control"])
}
