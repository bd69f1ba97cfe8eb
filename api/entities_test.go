package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// chatType has two static slash commands and no message schemas.
const chatType = `{"name":"chat","description":"a chat","slash_commands":[
	{"name":"pr-review","description":"Review a pull request","arguments":[{"name":"number","type":"number","required":true}]},
	{"name":"quickstart"}]}`

func TestSpawn(t *testing.T) {
	h := setup(t)
	h.registerType(chatType)

	r := h.spawn("chat", "one", nil)
	requireStatus(t, r, http.StatusCreated)
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	require.NotEmpty(t, r.Header.Get("X-Write-Token"))
	for _, secret := range []string{"write_token", "subscription_id", r.Header.Get("X-Write-Token")} {
		require.NotContains(t, string(r.Body), secret)
	}
	e := r.object(t)
	require.ElementsMatch(t, []string{"url", "type", "status", "streams", "tags", "spawn_args", "created_by", "created_at",
		"updated_at", "txid"}, keys(e))
	require.Equal(t, `{}`, string(e["spawn_args"]), "spawn args are {} when the spawn gave none, as the reference stores them")
	require.Equal(t, "/chat/one", str(t, e["url"]))
	require.Equal(t, "chat", str(t, e["type"]))
	require.Equal(t, "idle", str(t, e["status"]))
	require.JSONEq(t, `{"main":"/chat/one/main"}`, string(e["streams"]))
	require.Equal(t, `{}`, string(e["tags"]))
	require.Equal(t, devPrincipal, str(t, e["created_by"]))
	requireMillis(t, e["created_at"])
	requireMillis(t, e["updated_at"])
	require.Positive(t, integer(t, e["txid"]), "txid is a JSON number")

	// GET shows the same entity, without the txid.
	got := h.getEntity("/chat/one")
	delete(e, "txid")
	require.Equal(t, e, got)
	r = h.do(http.MethodGet, entitiesPath+"/chat/one", nil)
	require.NotContains(t, string(r.Body), "write_token")
	require.NotContains(t, string(r.Body), "subscription_id")

	// The stream starts with entity_created, then one insert per static command, in the
	// type's order.
	events := h.events("/chat/one")
	require.Equal(t, []string{"entity_created", "slash_command", "slash_command"}, types(events))

	created := events[0]
	require.Equal(t, "entity-created", created.Key)
	require.Equal(t, "insert", created.Headers["operation"])
	require.ElementsMatch(t, []string{"entity_type", "timestamp", "args"}, keys(created.Value))
	require.Equal(t, "chat", str(t, created.Value["entity_type"]))
	require.Equal(t, `{}`, string(created.Value["args"]))
	requireISOTime(t, created.Value["timestamp"])

	wantCommands := []struct{ key, value string }{
		{"pr-review", `{"key":"pr-review","name":"pr-review","description":"Review a pull request",
			"arguments":[{"name":"number","type":"number","required":true}],"source":"static",
			"owner":null,"version":null,"dynamic_layers":null}`},
		{"quickstart", `{"key":"quickstart","name":"quickstart","description":null,"arguments":null,
			"source":"static","owner":null,"version":null,"dynamic_layers":null}`},
	}
	updatedAt := str(t, events[1].Value["updated_at"])
	for i, want := range wantCommands {
		ev := events[i+1]
		require.Equal(t, want.key, ev.Key)
		require.Equal(t, "insert", ev.Headers["operation"])
		requireISOTime(t, ev.Value["updated_at"])
		require.Equal(t, updatedAt, str(t, ev.Value["updated_at"]), "one spawn, one updated_at")
		value := map[string]json.RawMessage{}
		for k, v := range ev.Value {
			if k != "updated_at" {
				value[k] = v
			}
		}
		b, _ := json.Marshal(value)
		require.JSONEq(t, want.value, string(b))
	}
}

func TestSpawnRejects(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"task","description":"d","creation_schema":{"type":"object",
		"properties":{"n":{"type":"integer"},"label":{"type":"string","minLength":2}},"required":["n"]}}`)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "taken", nil)

	t.Run("unknown type", func(t *testing.T) {
		requireError(t, h.spawn("nope", "x", nil), http.StatusNotFound, "UNKNOWN_ENTITY_TYPE", "Entity type not found: nope")
	})
	t.Run("principal", func(t *testing.T) {
		requireError(t, h.spawn("principal", "user:x", nil), http.StatusBadRequest, "INVALID_REQUEST",
			"principal entities cannot be spawned")
	})
	t.Run("duplicate", func(t *testing.T) {
		requireError(t, h.spawn("chat", "taken", nil), http.StatusConflict, "DUPLICATE_URL",
			"An entity already exists at /chat/taken")
	})
	t.Run("args failing the creation schema", func(t *testing.T) {
		r := h.spawn("task", "a", `{"args":{"n":"seven","label":"x"}}`)
		requireValidationFailed(t, r,
			detail{"/n", "must be integer"},
			detail{"/label", "must NOT have fewer than 2 characters"})
	})
	t.Run("no args but required properties", func(t *testing.T) {
		requireValidationFailed(t, h.spawn("task", "b", nil), detail{"/", "must have required property 'n'"})
	})
	t.Run("args not an object", func(t *testing.T) {
		requireSchemaMismatch(t, h.spawn("task", "c", `{"args":[1]}`), detail{"/args", "must be object"})
	})
	t.Run("non-string tag", func(t *testing.T) {
		requireSchemaMismatch(t, h.spawn("chat", "d", `{"tags":{"ok":"yes","n":1}}`), detail{"/tags/n", "must be string"})
	})
	t.Run("missing parent", func(t *testing.T) {
		requireError(t, h.spawn("chat", "e", `{"parent":"/chat/ghost"}`), http.StatusNotFound, "NOT_FOUND",
			"Parent entity not found")
	})
	t.Run("bad instance id", func(t *testing.T) {
		for _, id := range []string{"bad!id", "a%20b", "..", strings.Repeat("x", 257)} {
			requireError(t, h.spawn("chat", id, nil), http.StatusBadRequest, "INVALID_REQUEST",
				"Instance ids must be 1-256 characters of letters, digits, '-', '_', '.', ':' and '@'")
		}
	})
	t.Run("invalid JSON", func(t *testing.T) {
		requireError(t, h.spawn("chat", "f", `{"tags":`), http.StatusBadRequest, "INVALID_REQUEST", "Invalid JSON body")
	})

	// None of the refused spawns left an entity behind.
	r := h.do(http.MethodGet, entitiesPath, nil)
	requireStatus(t, r, http.StatusOK)
	var list []map[string]json.RawMessage
	r.decode(t, &list)
	require.Len(t, list, 2) // the spawner's principal entity, made by the one good spawn, and it
	require.Equal(t, devPrincipal, str(t, list[0]["url"]))
	require.Equal(t, "/chat/taken", str(t, list[1]["url"]))

	// With valid args the same type spawns.
	e := h.mustSpawn("task", "ok", `{"args":{"n":7},"tags":{"team":"core"}}`)
	require.JSONEq(t, `{"n":7}`, string(e["spawn_args"]))
	require.JSONEq(t, `{"team":"core"}`, string(e["tags"]))
	events := h.events("/task/ok")
	require.Equal(t, []string{"entity_created"}, types(events))
	require.JSONEq(t, `{"n":7}`, string(events[0].Value["args"]))

	// Args are shown with the same bytes everywhere, whatever whitespace was sent.
	const compact = `{"n":8,"xs":[1,2]}`
	spawned := h.mustSpawn("task", "spaced", `{"args": { "n": 8,  "xs": [1, 2] } }`)
	require.Equal(t, compact, string(spawned["spawn_args"]), "spawn response")
	require.Equal(t, compact, string(h.getEntity("/task/spaced")["spawn_args"]), "GET")
	r = h.do(http.MethodGet, entitiesPath+"?type=task", nil)
	requireStatus(t, r, http.StatusOK)
	list = nil
	r.decode(t, &list)
	var listed json.RawMessage
	for _, e := range list {
		if str(t, e["url"]) == "/task/spaced" {
			listed = e["spawn_args"]
		}
	}
	require.Equal(t, compact, string(listed), "list")
	require.Equal(t, compact, string(h.events("/task/spaced")[0].Value["args"]), "entity_created")
}

// TestPercentEncodedInstanceIDs: an id with ':' or '@' sent percent-encoded (as
// encodeURIComponent does) names the same entity as the plain form.
func TestPercentEncodedInstanceIDs(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	r := h.do(http.MethodPut, entitiesPath+"/chat/user%3Aada%40home", `{}`)
	requireStatus(t, r, http.StatusCreated)
	require.Equal(t, "/chat/user:ada@home", str(t, r.object(t)["url"]))
	require.Equal(t, "/chat/user:ada@home", str(t, h.getEntity("/chat/user:ada@home")["url"]))
	requireStatus(t, h.do(http.MethodGet, entitiesPath+"/chat/user%3Aada%40home", nil), http.StatusOK)
	h.mustSend("/chat/user%3Aada%40home", `{"payload":1}`)
	require.Len(t, ofType(h.events("/chat/user:ada@home"), "inbox"), 1)
}

func TestSpawnWithParent(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "parent", nil)

	child := h.mustSpawn("chat", "child", `{"parent":"/chat/parent"}`)
	require.Equal(t, "/chat/parent", str(t, child["parent"]))
	require.Equal(t, "/chat/parent", str(t, h.getEntity("/chat/child")["parent"]))
	created := h.events("/chat/child")[0]
	require.Equal(t, "entity_created", created.Type)
	require.Equal(t, "/chat/parent", str(t, created.Value["parent_url"]))
}

func TestSpawnWithInitialMessage(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d","slash_commands":[{"name":"quickstart"}],
		"inbox_schemas":{"task":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}}}`)

	const payload = `{"source":"/quickstart now","nodes":[{"kind":"slash_command","start":0,"end":11,"raw":"/quickstart","name":"quickstart"}]}`
	h.mustSpawn("chat", "one", `{"initialMessage":`+payload+`,"initialMessageType":"composer_input"}`)

	events := h.events("/chat/one")
	require.Equal(t, []string{"entity_created", "slash_command", "inbox"}, types(events))
	msg := events[2]
	require.Equal(t, "insert", msg.Headers["operation"])
	require.Regexp(t, uuidRe, msg.Headers["txid"])
	require.Equal(t, payload, string(msg.Value["payload"]))
	require.Equal(t, "composer_input", str(t, msg.Value["message_type"]))
	require.Equal(t, devPrincipal, str(t, msg.Value["from"]))
	require.Equal(t, "immediate", str(t, msg.Value["mode"]))
	require.Equal(t, "processed", str(t, msg.Value["status"]))

	// A typed initial message is validated by the type's inbox schema.
	h.mustSpawn("chat", "typed", `{"initialMessage":{"n":1},"initialMessageType":"task"}`)
	require.Equal(t, []string{"entity_created", "slash_command", "inbox"}, types(h.events("/chat/typed")))
}

func TestSpawnWithInvalidInitialMessageCreatesNothing(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d",
		"inbox_schemas":{"task":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}}}`)

	cases := []struct {
		name string
		body string
		want func(t *testing.T, r *response)
	}{
		{"invalid composer_input",
			`{"initialMessage":{"source":"/quickstart","nodes":[{"kind":"slash_command","start":0,"end":11,"raw":"/quick","name":"quickstart"}]},"initialMessageType":"composer_input"}`,
			func(t *testing.T, r *response) {
				requireValidationFailed(t, r, detail{"/nodes/0/raw", "must equal source.slice(start, end)"})
			}},
		{"payload failing the inbox schema",
			`{"initialMessage":{"n":"x"},"initialMessageType":"task"}`,
			func(t *testing.T, r *response) { requireValidationFailed(t, r, detail{"/n", "must be integer"}) }},
		{"unknown message type",
			`{"initialMessage":{},"initialMessageType":"nope"}`,
			func(t *testing.T, r *response) {
				requireError(t, r, http.StatusUnprocessableEntity, "UNKNOWN_MESSAGE_TYPE", "Unknown message type: nope")
			}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := "e" + strconv.Itoa(i)
			c.want(t, h.spawn("chat", id, c.body))

			requireError(t, h.do(http.MethodGet, entitiesPath+"/chat/"+id, nil), http.StatusNotFound, "NOT_FOUND",
				"Entity not found at /chat/"+id)
			requireStatus(t, h.do(http.MethodGet, "/chat/"+id+"/main?offset=-1", nil), http.StatusNotFound)

			// The URL is free: a correct spawn succeeds and its stream has no trace of the
			// refused message.
			h.mustSpawn("chat", id, nil)
			require.Equal(t, []string{"entity_created"}, types(h.events("/chat/"+id)))
		})
	}
}

func TestConcurrentSpawnsOfOneURL(t *testing.T) {
	h := setup(t)
	h.registerType(chatType)

	const n = 12
	statuses := make([]*response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { statuses[i] = h.spawn("chat", "race", nil) })
	}
	wg.Wait()
	created := 0
	for _, r := range statuses {
		if r.Status == http.StatusCreated {
			created++
			continue
		}
		requireError(t, r, http.StatusConflict, "DUPLICATE_URL", "An entity already exists at /chat/race")
	}
	require.Equal(t, 1, created)
	// One stream, seeded once.
	require.Equal(t, []string{"entity_created", "slash_command", "slash_command"}, types(h.events("/chat/race")))
}

func TestGetAndHeadEntity(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d","externally_writable_collections":{"notes":{"type":"state:notes"}}}`)
	h.mustSpawn("chat", "one", nil)

	e := h.getEntity("/chat/one")
	require.Equal(t, "/chat/one", str(t, e["url"]))
	require.JSONEq(t, `{"notes":{"type":"state:notes"}}`, string(e["externally_writable_collections"]))

	requireError(t, h.do(http.MethodGet, entitiesPath+"/chat/missing", nil), http.StatusNotFound, "NOT_FOUND",
		"Entity not found at /chat/missing")
	requireError(t, h.do(http.MethodGet, entitiesPath+"/nope/one", nil), http.StatusNotFound, "UNKNOWN_ENTITY_TYPE",
		"Entity type not found: nope")

	for path, status := range map[string]int{
		"/chat/one": http.StatusOK, "/chat/missing": http.StatusNotFound, "/nope/one": http.StatusNotFound,
	} {
		r := h.do(http.MethodHead, entitiesPath+path, nil)
		require.Equal(t, status, r.Status, path)
		require.Empty(t, r.Body, path)
	}
}

func TestListEntities(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.registerType(`{"name":"task","description":"d"}`)

	list := func(query string) []string {
		t.Helper()
		r := h.do(http.MethodGet, entitiesPath+query, nil)
		requireStatus(t, r, http.StatusOK)
		require.Equal(t, "application/json", r.Header.Get("Content-Type"))
		var es []map[string]json.RawMessage
		r.decode(t, &es)
		urls := []string{}
		for _, e := range es {
			require.NotContains(t, keys(e), "write_token")
			urls = append(urls, str(t, e["url"]))
		}
		return urls
	}
	require.Equal(t, []string{}, list(""))

	h.mustSpawn("chat", "a", nil)
	h.mustSpawn("chat", "b", `{"parent":"/chat/a"}`)
	h.mustSpawn("task", "c", `{"parent":"/chat/a"}`)
	h.mustSpawn("task", "d", nil)
	requireStatus(t, h.signal("/task/d", `{"signal":"SIGSTOP"}`), http.StatusOK)

	// (and the creator's principal entity, made on its first spawn)
	require.ElementsMatch(t, []string{devPrincipal, "/chat/a", "/chat/b", "/task/c", "/task/d"}, list(""))
	require.ElementsMatch(t, []string{"/task/c", "/task/d"}, list("?type=task"))
	require.ElementsMatch(t, []string{"/task/d"}, list("?status=paused"))
	require.ElementsMatch(t, []string{devPrincipal, "/chat/a", "/chat/b", "/task/c"}, list("?status=idle"))
	require.ElementsMatch(t, []string{"/chat/b", "/task/c"}, list("?parent=/chat/a"))
	require.ElementsMatch(t, []string{"/task/c"}, list("?parent=/chat/a&type=task"))
	require.Equal(t, []string{}, list("?type=nope"))

	requireError(t, h.do(http.MethodGet, entitiesPath+"?status=sleeping", nil), http.StatusBadRequest, "INVALID_REQUEST",
		"status must be one of running, idle, paused, stopping, stopped, killed")
}

// signalResult is the body of a successful signal.
type signalResult struct {
	URL           string `json:"url"`
	Signal        string `json:"signal"`
	PreviousState string `json:"previous_state"`
	NewState      string `json:"new_state"`
	CreatedAt     int64  `json:"created_at"`
	Txid          int64  `json:"txid"`
}

func (h *harness) mustSignal(url, body string) signalResult {
	h.t.Helper()
	r := h.signal(url, body)
	requireStatus(h.t, r, http.StatusOK)
	require.ElementsMatch(h.t, []string{"url", "signal", "previous_state", "new_state", "created_at", "txid"}, keys(r.object(h.t)))
	requireMillis(h.t, r.object(h.t)["created_at"])
	var out signalResult
	r.decode(h.t, &out)
	require.Positive(h.t, out.Txid)
	return out
}

func TestSignals(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "one", nil)
	const url = "/chat/one"

	// requireLastSignal checks the signal event the last signal appended.
	requireLastSignal := func(res signalResult, status, outcome string) {
		t.Helper()
		events := h.events(url)
		ev := events[len(events)-1]
		require.Equal(t, "signal", ev.Type)
		require.Equal(t, "insert", ev.Headers["operation"])
		require.Equal(t, strconv.FormatInt(res.Txid, 10), ev.Headers["txid"])
		require.Equal(t, res.Signal, str(t, ev.Value["signal"]))
		require.Equal(t, "/_electric/server", str(t, ev.Value["sender"]))
		require.Equal(t, status, str(t, ev.Value["status"]))
		require.Equal(t, outcome, str(t, ev.Value["outcome"]))
		require.Equal(t, res.PreviousState, str(t, ev.Value["previous_state"]))
		require.Equal(t, res.NewState, str(t, ev.Value["new_state"]))
		requireISOTime(t, ev.Value["timestamp"])
	}

	res := h.mustSignal(url, `{"signal":"SIGSTOP","reason":"lunch"}`)
	require.Equal(t, signalResult{URL: url, Signal: "SIGSTOP", PreviousState: "idle", NewState: "paused",
		CreatedAt: res.CreatedAt, Txid: res.Txid}, res)
	require.Equal(t, "paused", h.status(url))
	requireLastSignal(res, "handled", "paused")
	events := h.events(url)
	require.Equal(t, "lunch", str(t, events[len(events)-1].Value["reason"]))

	// A paused entity ignores signals other than SIGCONT, SIGTERM and SIGKILL.
	res = h.mustSignal(url, `{"signal":"SIGINT"}`)
	require.Equal(t, "paused", res.NewState)
	requireLastSignal(res, "unhandled", "ignored")

	res = h.mustSignal(url, `{"signal":"SIGCONT"}`)
	require.Equal(t, [2]string{"paused", "idle"}, [2]string{res.PreviousState, res.NewState})
	require.Equal(t, "idle", h.status(url))
	requireLastSignal(res, "handled", "resumed")

	// A send (mode immediate) to a paused entity resumes it.
	h.mustSignal(url, `{"signal":"SIGSTOP"}`)
	require.Equal(t, "paused", h.status(url))
	h.mustSend(url, `{"payload":"wake up","mode":"immediate"}`)
	require.Equal(t, "idle", h.status(url))

	// ... a send with mode paused does not.
	h.mustSignal(url, `{"signal":"SIGSTOP"}`)
	h.mustSend(url, `{"payload":"later","mode":"paused"}`)
	require.Equal(t, "paused", h.status(url))
	h.mustSignal(url, `{"signal":"SIGCONT"}`)

	res = h.mustSignal(url, `{"signal":"SIGKILL"}`)
	require.Equal(t, [2]string{"idle", "killed"}, [2]string{res.PreviousState, res.NewState})
	require.Equal(t, "killed", h.status(url))
	requireLastSignal(res, "handled", "killed")
	read := h.readStream(url)
	require.Equal(t, "true", read.Last.Header.Get("Stream-Closed"))

	// Killed is terminal.
	for _, sig := range []string{"SIGCONT", "SIGKILL", "SIGTERM"} {
		requireError(t, h.signal(url, `{"signal":"`+sig+`"}`), http.StatusConflict, "INVALID_SIGNAL",
			"Entity is killed and accepts no signals")
	}
	require.Len(t, h.events(url), len(read.Events), "a refused signal appends nothing")
}

func TestSigtermStopsAndClosesTheStream(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "one", nil)
	h.mustSpawn("chat", "two", nil)

	before := h.readStream("/chat/one")
	require.Empty(t, before.Last.Header.Get("Stream-Closed"))

	res := h.mustSignal("/chat/one", `{"signal":"SIGTERM"}`)
	require.Equal(t, [2]string{"idle", "stopped"}, [2]string{res.PreviousState, res.NewState})
	require.Equal(t, "stopped", h.status("/chat/one"))
	after := h.readStream("/chat/one")
	require.Equal(t, "true", after.Last.Header.Get("Stream-Closed"))
	last := after.Events[len(after.Events)-1]
	require.Equal(t, "signal", last.Type)
	require.Equal(t, "stopped", str(t, last.Value["new_state"]))
	requireError(t, h.signal("/chat/one", `{"signal":"SIGKILL"}`), http.StatusConflict, "INVALID_SIGNAL",
		"Entity is stopped and accepts no signals")

	// SIGTERM of a paused entity stops it too.
	h.mustSignal("/chat/two", `{"signal":"SIGSTOP"}`)
	res = h.mustSignal("/chat/two", `{"signal":"SIGTERM"}`)
	require.Equal(t, [2]string{"paused", "stopped"}, [2]string{res.PreviousState, res.NewState})
}

func TestSignalRejects(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "one", nil)

	const oneOf = "must be one of SIGINT, SIGHUP, SIGTERM, SIGKILL, SIGSTOP, SIGCONT, SIGUSR"
	requireSchemaMismatch(t, h.signal("/chat/one", `{"signal":"SIGSEGV"}`), detail{"/signal", oneOf})
	requireSchemaMismatch(t, h.signal("/chat/one", `{}`), detail{"/signal", oneOf})
	requireSchemaMismatch(t, h.signal("/chat/one", `{"signal":9}`), detail{"/signal", "must be string"})
	requireError(t, h.signal("/chat/ghost", `{"signal":"SIGKILL"}`), http.StatusNotFound, "NOT_FOUND",
		"Entity not found at /chat/ghost")
	requireError(t, h.signal("/nope/one", `{"signal":"SIGKILL"}`), http.StatusNotFound, "UNKNOWN_ENTITY_TYPE",
		"Entity type not found: nope")
	require.Equal(t, "idle", h.status("/chat/one"))
	require.Equal(t, []string{"entity_created"}, types(h.events("/chat/one")))
}

func TestDeleteEntityKillsIt(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "one", nil)

	r := h.do(http.MethodDelete, entitiesPath+"/chat/one", nil)
	requireStatus(t, r, http.StatusOK)
	body := r.object(t)
	require.Equal(t, []string{"txid"}, keys(body))
	txid := integer(t, body["txid"])
	require.Positive(t, txid)

	require.Equal(t, "killed", h.status("/chat/one"))
	read := h.readStream("/chat/one")
	require.Equal(t, "true", read.Last.Header.Get("Stream-Closed"))
	last := read.Events[len(read.Events)-1]
	require.Equal(t, "signal", last.Type)
	require.Equal(t, "SIGKILL", str(t, last.Value["signal"]))
	require.Equal(t, "idle", str(t, last.Value["previous_state"]))
	require.Equal(t, "killed", str(t, last.Value["new_state"]))
	require.Equal(t, strconv.FormatInt(txid, 10), last.Headers["txid"])

	requireError(t, h.do(http.MethodDelete, entitiesPath+"/chat/one", nil), http.StatusConflict, "INVALID_SIGNAL",
		"Entity is killed and accepts no signals")
	requireError(t, h.do(http.MethodDelete, entitiesPath+"/chat/ghost", nil), http.StatusNotFound, "NOT_FOUND",
		"Entity not found at /chat/ghost")
	requireError(t, h.do(http.MethodDelete, entitiesPath+"/nope/one", nil), http.StatusNotFound, "UNKNOWN_ENTITY_TYPE",
		"Entity type not found: nope")
}

func TestInternalErrorsRevealNothing(t *testing.T) {
	h := setup(t, testserverQuiet())
	h.registerType(`{"name":"chat","description":"d"}`)

	h.srv.Pool.Close() // every query now fails inside the server
	for _, path := range []string{typesPath, entitiesPath} {
		r := h.do(http.MethodGet, path, nil)
		requireDetails(t, r, http.StatusInternalServerError, "INTERNAL_SERVER_ERROR", "Internal server error")
		for _, leak := range []string{"pool", "closed", "entity:", "sql", "pgx"} {
			require.NotContains(t, strings.ToLower(string(r.Body)), leak)
		}
	}
}

// The list pages in (created_at, url) order: a full page says where the next starts
// (Entityd-Next-After and a Link with the filters kept), the last page does not, and the
// pages together are the whole list once.
func TestListEntitiesPages(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.registerType(`{"name":"task","description":"d"}`)
	var want []string
	for i := 0; i < 25; i++ {
		h.mustSpawn("chat", fmt.Sprintf("c%02d", i), nil)
		want = append(want, fmt.Sprintf("/chat/c%02d", i))
		h.mustSpawn("task", fmt.Sprintf("t%02d", i), nil)
	}

	page := func(query string) ([]string, *response) {
		t.Helper()
		r := h.do(http.MethodGet, entitiesPath+query, nil)
		requireStatus(t, r, http.StatusOK)
		var es []map[string]json.RawMessage
		r.decode(t, &es)
		urls := []string{}
		for _, e := range es {
			urls = append(urls, str(t, e["url"]))
		}
		return urls, r
	}
	var got []string
	query := "?type=chat&limit=10"
	for pages := 0; ; pages++ {
		require.Less(t, pages, 4, "the pages never end")
		urls, r := page(query)
		got = append(got, urls...)
		next := r.Header.Get("Entityd-Next-After")
		if next == "" {
			require.Empty(t, r.Header.Get("Link"))
			require.Equal(t, 3, pages+1)
			break
		}
		require.Len(t, urls, 10)
		require.Equal(t, urls[len(urls)-1], next)
		link := r.Header.Get("Link")
		require.True(t, strings.HasSuffix(link, `>; rel="next"`), link)
		u, err := url.Parse(strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`))
		require.NoError(t, err)
		require.Equal(t, entitiesPath, u.Path)
		require.Equal(t, url.Values{"type": {"chat"}, "limit": {"10"}, "after": {next}}, u.Query())
		query = "?" + u.RawQuery
	}
	require.Equal(t, want, got, "creation order, each entity once")

	// a page exactly as long as what is left still has a cursor; the page after is empty
	urls, r := page("?type=chat&limit=5&after=/chat/c19")
	require.Equal(t, []string{"/chat/c20", "/chat/c21", "/chat/c22", "/chat/c23", "/chat/c24"}, urls)
	empty, r2 := page("?type=chat&limit=5&after=" + url.QueryEscape(r.Header.Get("Entityd-Next-After")))
	require.Equal(t, []string{}, empty)
	require.Empty(t, r2.Header.Get("Entityd-Next-After"))

	for _, bad := range []string{"0", "-1", "10001", "ten", "1.5"} {
		requireError(t, h.do(http.MethodGet, entitiesPath+"?limit="+bad, nil), http.StatusBadRequest, "INVALID_REQUEST",
			"limit must be an integer from 1 to 10000")
	}
	requireError(t, h.do(http.MethodGet, entitiesPath+"?after=/chat/nope", nil), http.StatusBadRequest, "INVALID_REQUEST",
		"after names an entity that no longer exists; list again from the start")
}
