package pgsync_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/pgsync"
)

// event is a State Protocol event as a stream serves it.
type event struct {
	Type    string          `json:"type"`
	Key     string          `json:"key"`
	Value   json.RawMessage `json:"value"`
	Headers map[string]any  `json:"headers"`
}

// change is a pg_sync_change's value: Electric's change message.
type change struct {
	Headers  map[string]any  `json:"headers"`
	Key      string          `json:"key"`
	Value    json.RawMessage `json:"value"`
	OldValue json.RawMessage `json:"old_value"`
}

// wakeValue is a wake event's value.
type wakeValue struct {
	Source  string `json:"source"`
	Changes []struct {
		Collection string `json:"collection"`
		Kind       string `json:"kind"`
		Key        string `json:"key"`
	} `json:"changes"`
}

const as = "Electric-Principal"

// options are the pgSync options of the tests' servers: quick to take the slot over.
func options(tables ...string) pgsync.Options {
	return pgsync.Options{Tables: tables, LeaseRetry: 50 * time.Millisecond, StatusInterval: 100 * time.Millisecond}
}

// exec runs SQL on the server's database (the application's writes to its tables).
func exec(t testing.TB, dbURL, sql string, args ...any) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql, args...)
	require.NoError(t, err, sql)
}

// dropSlotsAtEnd drops the database's replication slots when the test ends (after its
// servers stopped): a database with a slot cannot be dropped.
func dropSlotsAtEnd(t testing.TB, dbURL string) {
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		_, _ = conn.Exec(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = current_database()`)
	})
}

// call makes a request as principal who ("" for the dev principal).
func call(t testing.TB, s *testserver.Server, who, method, path, body string) (int, []byte) {
	t.Helper()
	if who == "" {
		return s.Call(t, method, path, body)
	}
	return s.Call(t, method, path, body, as, who)
}

// events reads the whole stream at path.
func events(t testing.TB, s *testserver.Server, who, path string) []event {
	t.Helper()
	status, body := call(t, s, who, http.MethodGet, path+"?offset=-1", "")
	require.Equal(t, http.StatusOK, status, "%s", body)
	var out []event
	require.NoError(t, json.Unmarshal(body, &out), "%s", body)
	return out
}

// register registers an observation and returns its stream.
func register(t testing.TB, s *testserver.Server, who, body string) (ref, stream string) {
	t.Helper()
	status, out := call(t, s, who, http.MethodPost, "/_electric/pg-sync/register", body)
	require.Equal(t, http.StatusOK, status, "%s", out)
	var got struct{ SourceRef, StreamURL string }
	require.NoError(t, json.Unmarshal(out, &got))
	require.Equal(t, pgsync.Prefix+got.SourceRef, got.StreamURL)
	return got.SourceRef, got.StreamURL
}

// spawn spawns /watcher/<id> (registering the type when needed).
func spawn(t testing.TB, s *testserver.Server, who, id string) string {
	t.Helper()
	status, out := call(t, s, who, http.MethodPost, "/_electric/entity-types", `{"name":"watcher","description":"w"}`)
	require.Contains(t, []int{http.StatusCreated, http.StatusOK, http.StatusConflict}, status, "%s", out)
	status, out = call(t, s, who, http.MethodPut, "/_electric/entities/watcher/"+id, `{}`)
	require.Equal(t, http.StatusCreated, status, "%s", out)
	return "/watcher/" + id
}

// watch has the entity at url woken by changes on stream.
func watch(t testing.TB, s *testserver.Server, who, url, stream string) {
	t.Helper()
	status, out := call(t, s, who, http.MethodPost, "/_electric/wake", `{"subscriberUrl":"`+url+`","sourceUrl":"`+stream+
		`","condition":{"on":"change","collections":["pg_sync_change"]}}`)
	require.Equal(t, http.StatusNoContent, status, "%s", out)
}

// spawnWatcher spawns /watcher/<id> and has it woken by changes on stream.
func spawnWatcher(t testing.TB, s *testserver.Server, who, id, stream string) string {
	t.Helper()
	url := spawn(t, s, who, id)
	watch(t, s, who, url, stream)
	return url
}

// wakes are the changes the entity's wakes carried, as "kind key".
func wakes(t testing.TB, s *testserver.Server, who, url string) []string {
	t.Helper()
	var out []string
	for _, e := range events(t, s, who, url+"/main") {
		if e.Type != "wake" {
			continue
		}
		var v wakeValue
		require.NoError(t, json.Unmarshal(e.Value, &v))
		for _, c := range v.Changes {
			require.Equal(t, "pg_sync_change", c.Collection)
			out = append(out, c.Kind+" "+c.Key)
		}
	}
	return out
}

// changes are the stream's pg_sync_change events, decoded.
func changes(t testing.TB, s *testserver.Server, who, stream string) []change {
	t.Helper()
	return changesOf(t, events(t, s, who, stream))
}

// changesOf checks that each event is a change and returns the changes.
func changesOf(t testing.TB, evs []event) []change {
	t.Helper()
	var out []change
	for _, e := range evs {
		require.Equal(t, pgsync.ChangeType, e.Type)
		var c change
		require.NoError(t, json.Unmarshal(e.Value, &c))
		require.Equal(t, e.Key, c.Key)
		require.Equal(t, e.Headers["operation"], c.Headers["operation"])
		out = append(out, c)
	}
	return out
}

func ops(cs []change) string {
	var b []string
	for _, c := range cs {
		b = append(b, c.Headers["operation"].(string)+" "+c.Key)
	}
	return strings.Join(b, ", ")
}
