package pgsync_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/internal/testwait"
)

const ordersTable = `CREATE TABLE orders (id int PRIMARY KEY, item text NOT NULL, qty int, big bigint, meta jsonb, ok boolean)`

// TestObservationWakesOnInsertUpdateDelete: an entity observing an allow-listed table
// is woken by an INSERT, an UPDATE and a DELETE of its rows, with Electric's change
// messages on the observation's stream (typed values, the row key, the operation); a
// change committed before the registration is not delivered; a column list narrows the
// rows.
func TestObservationWakesOnInsertUpdateDelete(t *testing.T) {
	dbURL := pgtest.URL(t)
	dropSlotsAtEnd(t, dbURL)
	exec(t, dbURL, ordersTable)
	exec(t, dbURL, `INSERT INTO orders VALUES (0, 'before', 1, 1, '{}', true)`)
	s := testserver.Start(t, testserver.Options{DBURL: dbURL, QuietLogs: true, PgSync: options("public.orders")})

	url := spawn(t, s, "", "w1")
	ref, stream := register(t, s, "", `{"options":{"url":"http://electric.invalid/v1/shape","table":"orders","replica":"default"},"metadata":{"entityUrl":"/watcher/w1","wakeId":"w-1","runtimeConsumerId":"c","streamPath":"/watcher/w1/main","entityType":"watcher"}}`)
	again, _ := register(t, s, "", `{"options":{"table":"public.orders"},"metadata":{"entityUrl":"/watcher/w1","wakeId":"w-2"}}`)
	require.Equal(t, ref, again, "the url and the per-wake metadata are not part of the observation's identity")
	_, narrow := register(t, s, "", `{"options":{"table":"orders","columns":["id","qty"]}}`)
	watch(t, s, "", url, stream)

	exec(t, dbURL, `INSERT INTO orders VALUES (1, 'apple', 2, 9007199254740993, '{"a":[1,2]}', false)`)
	exec(t, dbURL, `UPDATE orders SET qty = 3 WHERE id = 1`)
	exec(t, dbURL, `DELETE FROM orders WHERE id = 1`)

	const key = `"public"."orders"/"1"`
	want := []string{"insert " + key, "update " + key, "delete " + key}
	testwait.Until(t, "three wakes", func() bool { return len(wakes(t, s, "", url)) == 3 }, 10*time.Second)
	require.Equal(t, want, wakes(t, s, "", url))

	cs := changes(t, s, "", stream)
	require.Equal(t, "insert "+key+", update "+key+", delete "+key, ops(cs), "the row changed before the registration is not there")
	require.JSONEq(t, `{"id":1,"item":"apple","qty":2,"big":"9007199254740993","meta":{"a":[1,2]},"ok":false}`, string(cs[0].Value))
	require.JSONEq(t, `{"id":1,"item":"apple","qty":3,"big":"9007199254740993","meta":{"a":[1,2]},"ok":false}`, string(cs[1].Value))
	require.JSONEq(t, `{"id":1}`, string(cs[2].Value), "a delete carries the key columns")
	require.Equal(t, []any{"public", "orders"}, cs[0].Headers["relation"])

	n := changes(t, s, "", narrow)
	require.Len(t, n, 3)
	require.JSONEq(t, `{"id":1,"qty":2}`, string(n[0].Value))
}

// TestObservationContinuesAcrossRestart: changes committed while no server runs are
// delivered by the next server from the slot, each exactly once, even when the first
// server never told the slot how far it had come (its changes are sent again and
// skipped by the LSN kept with the streams).
func TestObservationContinuesAcrossRestart(t *testing.T) {
	dbURL := pgtest.URL(t)
	dropSlotsAtEnd(t, dbURL)
	exec(t, dbURL, ordersTable)
	first := options("public.orders")
	first.StatusInterval = time.Hour // the slot hears nothing of what was applied
	s1 := testserver.Start(t, testserver.Options{DBURL: dbURL, QuietLogs: true, PgSync: first})
	_, stream := register(t, s1, "", `{"options":{"table":"orders"}}`)
	url := spawnWatcher(t, s1, "", "w1", stream)
	exec(t, dbURL, `INSERT INTO orders (id, item) VALUES (1, 'a')`)
	testwait.Until(t, "the first wake", func() bool { return len(wakes(t, s1, "", url)) == 1 }, 10*time.Second)
	s1.Stop()

	exec(t, dbURL, `INSERT INTO orders (id, item) VALUES (2, 'b')`)
	exec(t, dbURL, `UPDATE orders SET item = 'c' WHERE id = 1`)
	exec(t, dbURL, `DELETE FROM orders WHERE id = 2`)

	s2 := testserver.Start(t, testserver.Options{DBURL: dbURL, QuietLogs: true, PgSync: options("public.orders")})
	testwait.Until(t, "four wakes", func() bool { return len(wakes(t, s2, "", url)) >= 4 }, 15*time.Second)
	k1, k2 := `"public"."orders"/"1"`, `"public"."orders"/"2"`
	require.Equal(t, []string{"insert " + k1, "insert " + k2, "update " + k1, "delete " + k2}, wakes(t, s2, "", url))
	require.Equal(t, "insert "+k1+", insert "+k2+", update "+k1+", delete "+k2, ops(changes(t, s2, "", stream)))

	// and it goes on live
	exec(t, dbURL, `INSERT INTO orders (id, item) VALUES (3, 'd')`)
	testwait.Until(t, "five wakes", func() bool { return len(wakes(t, s2, "", url)) == 5 }, 10*time.Second)
}

// TestRefusals: tables off the allow-list, entityd's own tables, tables without a key,
// missing columns, where filters and malformed bodies are refused with clear errors and
// make nothing; a server without an allow-list answers 503.
func TestRefusals(t *testing.T) {
	dbURL := pgtest.URL(t)
	dropSlotsAtEnd(t, dbURL)
	exec(t, dbURL, ordersTable)
	exec(t, dbURL, `CREATE TABLE secrets (id int PRIMARY KEY, v text)`)
	exec(t, dbURL, `CREATE TABLE nokey (v text)`)
	s := testserver.Start(t, testserver.Options{DBURL: dbURL, QuietLogs: true, PgSync: options("public.orders", "public.nokey", "public.missing")})
	for _, c := range []struct {
		body   string
		status int
		want   string
	}{
		{`{"options":{"table":"secrets"}}`, http.StatusForbidden, "is not observable"},
		{`{"options":{"table":"streams"}}`, http.StatusForbidden, "is not observable"},
		{`{"options":{"table":"nokey"}}`, http.StatusBadRequest, "no primary key"},
		{`{"options":{"table":"missing"}}`, http.StatusBadRequest, "does not exist"},
		{`{"options":{"table":"orders","columns":["nope"]}}`, http.StatusBadRequest, "no column"},
		{`{"options":{"table":"orders","where":"qty > 1"}}`, http.StatusBadRequest, "where filters are not supported"},
		{`{"options":{"table":"orders","replica":"half"}}`, http.StatusBadRequest, "allowed values"},
		{`{"options":{"table":"\"orders\""}}`, http.StatusBadRequest, "identifier"},
		{`{"options":{"table":"a.b.c"}}`, http.StatusBadRequest, "identifier"},
		{`{"options":{"table":"orders","columns":"id"}}`, http.StatusBadRequest, "array of strings"},
		{`{"options":{"table":"orders","columns":["id","id"]}}`, http.StatusBadRequest, "duplicate"},
		{`{"options":{"table":"orders"},"extra":1}`, http.StatusBadRequest, "additional properties"},
		{`{"options":{}}`, http.StatusBadRequest, "required property 'table'"},
		{`{}`, http.StatusBadRequest, "required property 'options'"},
		{`{"options":{"table":"orders"},"metadata":{"entityUrl":5}}`, http.StatusBadRequest, "must be string"},
	} {
		status, body := call(t, s, "user:alice", http.MethodPost, "/_electric/pg-sync/register", c.body)
		require.Equal(t, c.status, status, "%s: %s", c.body, body)
		require.Contains(t, string(body), c.want, c.body)
	}
	var n int
	require.NoError(t, s.Pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_publication_tables WHERE tablename IN ('secrets', 'nokey')`).Scan(&n))
	require.Zero(t, n, "a refused table is never published (a keyless one would break its UPDATEs)")
	exec(t, dbURL, `UPDATE nokey SET v = 'x'`) // still works

	off := testserver.Start(t, testserver.Options{QuietLogs: true})
	status, body := call(t, off, "user:alice", http.MethodPost, "/_electric/pg-sync/register", `{"options":{"table":"orders"}}`)
	require.Equal(t, http.StatusForbidden, status)
	require.Contains(t, string(body), "--pg-sync-tables")
}

// TestStreamsAreTheirOwners: an observation's stream is read by the principal that
// registered it only; another principal registering the same table gets a stream of
// its own; nobody appends to one; and a principal may not register a wake on a stream
// it cannot read.
func TestStreamsAreTheirOwners(t *testing.T) {
	dbURL := pgtest.URL(t)
	dropSlotsAtEnd(t, dbURL)
	exec(t, dbURL, ordersTable)
	s := testserver.Start(t, testserver.Options{DBURL: dbURL, QuietLogs: true, PgSync: options("public.orders")})
	_, alice := register(t, s, "user:alice", `{"options":{"table":"orders"}}`)
	_, bob := register(t, s, "user:bob", `{"options":{"table":"orders"}}`)
	require.NotEqual(t, alice, bob)
	status, _ := call(t, s, "user:bob", http.MethodGet, alice+"?offset=-1", "")
	require.Equal(t, http.StatusForbidden, status)
	status, _ = call(t, s, "user:alice", http.MethodGet, alice+"?offset=-1", "")
	require.Equal(t, http.StatusOK, status)
	status, _ = call(t, s, "user:alice", http.MethodPost, alice, `[{"type":"pg_sync_change","key":"k","value":{},"headers":{"operation":"insert"}}]`)
	require.Equal(t, http.StatusForbidden, status, "the server writes it only")
	status, _ = call(t, s, "user:alice", http.MethodDelete, alice, "")
	require.Equal(t, http.StatusForbidden, status)
	status, _ = call(t, s, "user:alice", http.MethodPut, "/_electric/pg-sync/mine", `[]`)
	require.Equal(t, http.StatusBadRequest, status, "under the reserved prefix")
}

// TestUnobserve: DELETE …/pg-sync-observations/:sourceRef drops the wakes the entity's
// manifest entry for the source anchors (and writes the entry's delete); another
// entity's wake on the same stream goes on.
func TestUnobserve(t *testing.T) {
	dbURL := pgtest.URL(t)
	dropSlotsAtEnd(t, dbURL)
	exec(t, dbURL, ordersTable)
	s := testserver.Start(t, testserver.Options{DBURL: dbURL, QuietLogs: true, PgSync: options("public.orders")})
	ref, stream := register(t, s, "", `{"options":{"table":"orders"}}`)
	w1 := spawnWatcher(t, s, "", "w1", stream)
	w2 := spawnWatcher(t, s, "", "w2", stream)
	// the runtime's registration carries the manifest key of the source
	status, out := call(t, s, "", http.MethodPost, "/_electric/wake/unregister", `{"subscriberUrl":"`+w1+`","sourceUrl":"`+stream+`"}`)
	require.Equal(t, http.StatusNoContent, status, "%s", out)
	status, out = call(t, s, "", http.MethodPost, "/_electric/wake", `{"subscriberUrl":"`+w1+`","sourceUrl":"`+stream+
		`","condition":{"on":"change","collections":["pg_sync_change"]},"manifestKey":"source:pgSync:`+ref+`"}`)
	require.Equal(t, http.StatusNoContent, status, "%s", out)
	exec(t, dbURL, `INSERT INTO orders (id, item) VALUES (1, 'a')`)
	testwait.Until(t, "both woken", func() bool { return len(wakes(t, s, "", w1)) == 1 && len(wakes(t, s, "", w2)) == 1 }, 10*time.Second)

	status, out = call(t, s, "", http.MethodDelete, "/_electric/entities/watcher/w1/pg-sync-observations/"+ref, "")
	require.Equal(t, http.StatusOK, status, "%s", out)
	require.Regexp(t, `^\{"txid":"[0-9a-f-]{36}"\}$`, string(out))
	var manifest *event
	for _, e := range events(t, s, "", w1+"/main") {
		if e.Type == "manifest" {
			manifest = &e
		}
	}
	require.NotNil(t, manifest)
	require.Equal(t, "source:pgSync:"+ref, manifest.Key)
	require.Equal(t, "delete", manifest.Headers["operation"])

	exec(t, dbURL, `INSERT INTO orders (id, item) VALUES (2, 'b')`)
	testwait.Until(t, "w2 woken again", func() bool { return len(wakes(t, s, "", w2)) == 2 }, 10*time.Second)
	require.Len(t, wakes(t, s, "", w1), 1, "w1 no longer observes the table")
}

// TestObservingEntityShares: an observation that names its observing entity
// (metadata.entityUrl, as the runtime does) needs write on it, and its stream is then
// read by whoever may read that entity (the handler may run as another principal);
// others still may not read it.
func TestObservingEntityShares(t *testing.T) {
	dbURL := pgtest.URL(t)
	dropSlotsAtEnd(t, dbURL)
	exec(t, dbURL, ordersTable)
	s := testserver.Start(t, testserver.Options{DBURL: dbURL, QuietLogs: true, PgSync: options("public.orders")})
	status, out := call(t, s, "user:alice", http.MethodPost, "/_electric/entity-types", `{"name":"watcher","description":"w"}`)
	require.Equal(t, http.StatusCreated, status, "%s", out)
	status, out = call(t, s, "user:alice", http.MethodPut, "/_electric/entities/watcher/a1", `{}`)
	require.Equal(t, http.StatusCreated, status, "%s", out)
	status, out = call(t, s, "user:alice", http.MethodPost, "/_electric/entities/watcher/a1/grants",
		`{"subject_kind":"principal","subject_value":"user:rita","permission":"read"}`)
	require.Equal(t, http.StatusCreated, status, "%s", out)

	body := `{"options":{"table":"orders"},"metadata":{"entityUrl":"/watcher/a1"}}`
	status, _ = call(t, s, "user:bob", http.MethodPost, "/_electric/pg-sync/register", body)
	require.Equal(t, http.StatusUnauthorized, status, "bob may not write alice's entity (the entity API's answer)")
	status, _ = call(t, s, "user:alice", http.MethodPost, "/_electric/pg-sync/register", `{"options":{"table":"orders"},"metadata":{"entityUrl":"/watcher/none"}}`)
	require.Equal(t, http.StatusNotFound, status)
	_, stream := register(t, s, "user:alice", body)
	for who, want := range map[string]int{"user:alice": 200, "user:rita": 200, "user:bob": 403} {
		status, out := call(t, s, who, http.MethodGet, stream+"?offset=-1", "")
		require.Equal(t, want, status, "%s: %s", who, out)
	}
	status, _ = call(t, s, "user:rita", http.MethodPost, stream, `[]`)
	require.Equal(t, http.StatusForbidden, status)
}
