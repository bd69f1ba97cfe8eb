package shapes_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/internal/testserver"
)

// follow reads a shape from the start until it is up to date, as token, and returns
// its rows (key → value) and where it continues.
func (e *env) follow(token string, p url.Values) (map[string]map[string]any, string, string) {
	e.t.Helper()
	rows := map[string]map[string]any{}
	q := url.Values{"offset": {"-1"}}
	for k, v := range p {
		q[k] = v
	}
	for {
		r := e.doAs(token, "GET", "/_electric/electric/v1/shape?"+q.Encode(), "")
		e.mustStatus(r, http.StatusOK)
		handle, offset := r.header.Get("electric-handle"), r.header.Get("electric-offset")
		if apply(rows, r.msgs) {
			return rows, handle, offset
		}
		q.Set("handle", handle)
		q.Set("offset", offset)
	}
}

// changesAfter is the first want change messages of a shape after an offset, read with
// live long-polls (a change becomes final once older transactions end).
func (e *env) changesAfter(token string, p url.Values, handle, offset string, want int) []map[string]any {
	e.t.Helper()
	var out []map[string]any
	for polls := 0; len(out) < want; polls++ {
		require.Less(e.t, polls, 40, "waited for %d changes, got %v", want, out)
		q := url.Values{"handle": {handle}, "offset": {offset}, "live": {"true"}}
		for k, v := range p {
			q[k] = v
		}
		r := e.doAs(token, "GET", "/_electric/electric/v1/shape?"+q.Encode(), "")
		e.mustStatus(r, http.StatusOK)
		for _, m := range r.msgs {
			if _, ctl := m["headers"].(map[string]any)["control"]; !ctl {
				out = append(out, m)
			}
		}
		offset = r.header.Get("electric-offset")
	}
	return out
}

func txidOf(t *testing.T, r reply) float64 {
	t.Helper()
	var body struct {
		Txid *float64 `json:"txid"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.raw), &body), r.raw)
	require.NotNil(t, body.Txid, "the answer names its txid: %s", r.raw)
	return *body.Txid
}

// The entities shape takes the web UI's exact column list; spawn args are {} when the
// spawn gave none; and the txid a spawn, a signal that keeps the status and a tag answer
// with is the one their change messages carry in headers.txids.
func TestEntitiesShapeServesTheUIColumnsAndTxids(t *testing.T) {
	e := start(t)
	e.mustStatus(e.do("POST", "/_electric/entity-types", `{"name":"chat","description":"d",
		"inbox_schemas":{"msg":{"type":"object"}},"state_schemas":{"notes":{"type":"object"}}}`), http.StatusCreated)
	cols := url.Values{"table": {"entities"}, "columns": {"url,type,status,tags,spawn_args,sandbox,dispatch_policy,parent,created_by,type_revision,inbox_schemas,state_schemas,created_at,updated_at"}}
	// the caller's principal entity exists before (a first spawn makes it too, in a
	// transaction of its own), so the spawn below is the one change that follows
	e.mustStatus(e.do("GET", "/_electric/entities/principal/system:dev-local", ""), http.StatusOK)
	rows, handle, offset := e.follow("", cols)
	require.Len(t, rows, 1)

	spawn := e.do("PUT", "/_electric/entities/chat/c1", `{}`)
	e.mustStatus(spawn, http.StatusCreated)
	require.Contains(t, spawn.raw, `"spawn_args":{}`, "spawn args are stored as {}")
	changes := e.changesAfter("", cols, handle, offset, 1)
	require.Len(t, changes, 1)
	h := changes[0]["headers"].(map[string]any)
	require.Equal(t, "insert", h["operation"])
	require.Equal(t, []any{txidOf(t, spawn)}, h["txids"], "the spawn's txid is the change's")
	v := changes[0]["value"].(map[string]any)
	require.Equal(t, "{}", v["spawn_args"])
	require.Nil(t, v["sandbox"])
	require.Nil(t, v["dispatch_policy"])
	require.JSONEq(t, `{"msg":{"type":"object"}}`, v["inbox_schemas"].(string))
	require.JSONEq(t, `{"notes":{"type":"object"}}`, v["state_schemas"].(string))
	require.Len(t, v, 14, "every column asked for")

	// from the snapshot's end: the spawn is in the rows, and the snapshot says it saw it
	r := e.do("GET", "/_electric/electric/v1/shape?"+url.Values{"table": cols["table"], "columns": cols["columns"], "offset": {"-1"}}.Encode(), "")
	e.mustStatus(r, http.StatusOK)
	var end map[string]any
	for _, m := range r.msgs {
		if h := m["headers"].(map[string]any); h["control"] == "snapshot-end" {
			end = h
		}
	}
	require.NotNil(t, end, "a snapshot ends with snapshot-end: %s", r.raw)
	require.True(t, visibleIn(txidOf(t, spawn), end), "the snapshot saw the spawn: %v", end)

	_, handle, offset = e.follow("", cols)
	sig := e.do("POST", "/_electric/entities/chat/c1/signal", `{"signal":"SIGUSR"}`)
	e.mustStatus(sig, http.StatusOK)
	tag := e.do("POST", "/_electric/entities/chat/c1/tags/title", `{"value":"hello"}`)
	e.mustStatus(tag, http.StatusOK)
	changes = e.changesAfter("", cols, handle, offset, 2)
	require.Len(t, changes, 2, "a signal that keeps the status still changes the row")
	require.Equal(t, []any{txidOf(t, sig)}, changes[0]["headers"].(map[string]any)["txids"])
	require.Equal(t, []any{txidOf(t, tag)}, changes[1]["headers"].(map[string]any)["txids"])
}

// The runners, runner_runtime_diagnostics, users and entity_effective_permissions shapes
// answer the caller's rows: its own runners (an operator's too), itself as a user, the
// grants to it on entities it may read; an operator sees every user and grant.
func TestUIShapesAreScopedToTheCaller(t *testing.T) {
	t.Parallel()
	key := testserver.NewJWTKey(t)
	e := &env{t: t, srv: testserver.Start(t, testserver.Options{QuietLogs: true, Admins: []string{"user:root"},
		API: api.Config{Auth: key.Auth}})}
	alice, bob, root := key.Token(t, "user:alice"), key.Token(t, "user:bob"), key.Token(t, "user:root")
	e.mustStatus(e.doAs(alice, "POST", "/_electric/runners", `{"id":"laptop","label":"Laptop"}`), http.StatusCreated)
	e.mustStatus(e.doAs(bob, "POST", "/_electric/runners", `{"id":"desk","label":"Desk"}`), http.StatusCreated)
	e.mustStatus(e.doAs(alice, "POST", "/_electric/entity-types", `{"name":"doc","description":"d"}`), http.StatusCreated)
	e.mustStatus(e.doAs(alice, "PUT", "/_electric/entities/doc/d1", `{}`), http.StatusCreated)
	e.mustStatus(e.doAs(alice, "PUT", "/_electric/entities/doc/d2", `{}`), http.StatusCreated)
	e.mustStatus(e.doAs(alice, "POST", "/_electric/entities/doc/d1/grants",
		`{"subject_kind":"principal","subject_value":"user:bob","permission":"read"}`), http.StatusCreated)
	e.mustStatus(e.doAs(alice, "POST", "/_electric/entities/doc/d2/grants",
		`{"subject_kind":"principal","subject_value":"user:carol","permission":"read"}`), http.StatusCreated)

	keys := func(token, table string) []string {
		rows, _, _ := e.follow(token, url.Values{"table": {table}})
		var out []string
		for _, v := range rows {
			for _, k := range []string{"id", "runner_id"} {
				if s, ok := v[k].(string); ok {
					out = append(out, s)
				}
			}
		}
		return out
	}
	runners := url.Values{"table": {"runners"}}
	rows, _, _ := e.follow(alice, runners)
	require.Len(t, rows, 1)
	require.Equal(t, "user:alice", rows[`"public"."runners"/"laptop"`]["owner_principal"])
	require.ElementsMatch(t, []string{"desk"}, keys(bob, "runners"))
	require.Empty(t, keys(root, "runners"), "runners are their owners' alone, as in the reference")

	// diagnostics appear with the first heartbeat, for the runner's owner
	diag := url.Values{"table": {"runner_runtime_diagnostics"}, "where": {"runner_id = $1"}, "params[1]": {"laptop"}}
	rows, handle, offset := e.follow(alice, diag)
	require.Empty(t, rows)
	e.mustStatus(e.doAs(alice, "POST", "/_electric/runners/laptop/heartbeat", `{"diagnostics":{"events_received":3}}`), http.StatusOK)
	changes := e.changesAfter(alice, diag, handle, offset, 1)
	require.Len(t, changes, 1)
	require.Equal(t, "insert", changes[0]["headers"].(map[string]any)["operation"])
	require.JSONEq(t, `{"events_received":3}`, changes[0]["value"].(map[string]any)["diagnostics"].(string))
	require.Empty(t, keys(bob, "runner_runtime_diagnostics"))

	// users: each user principal that called; one sees itself, an operator everyone
	require.ElementsMatch(t, []string{"alice"}, keys(alice, "users"))
	require.ElementsMatch(t, []string{"bob"}, keys(bob, "users"))
	require.ElementsMatch(t, []string{"alice", "bob", "root"}, keys(root, "users"))

	// permissions: bob's grant on d1, shown to bob with a numeric id; carol's on d2 to nobody
	// but the operator (carol never called); alice created both entities and holds no grant
	perms := url.Values{"table": {"entity_effective_permissions"}}
	rows, handle, offset = e.follow(bob, perms)
	require.Len(t, rows, 1, "%v", rows)
	for _, v := range rows {
		require.Equal(t, "/doc/d1", v["entity_url"])
		require.Equal(t, "read", v["permission"])
		require.Regexp(t, `^[0-9]+$`, v["id"])
		require.Equal(t, v["id"], v["source_grant_id"])
	}
	require.Empty(t, keys(alice, "entity_effective_permissions"))
	require.Len(t, keys(root, "entity_effective_permissions"), 2)

	// a revoke reaches bob as a delete
	var list []map[string]any
	r := e.doAs(alice, "GET", "/_electric/entities/doc/d1/grants", "")
	e.mustStatus(r, http.StatusOK)
	require.NoError(t, json.Unmarshal([]byte(r.raw), &list), r.raw)
	require.Len(t, list, 1, r.raw)
	e.mustStatus(e.doAs(alice, "DELETE", "/_electric/entities/doc/d1/grants/"+list[0]["id"].(string), ""), http.StatusNoContent)
	changes = e.changesAfter(bob, perms, handle, offset, 1)
	require.Len(t, changes, 1)
	require.Equal(t, "delete", changes[0]["headers"].(map[string]any)["operation"])
}
