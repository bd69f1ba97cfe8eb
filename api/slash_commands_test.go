package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/internal/testserver"
)

// HTTP-level tests of the slash-command API (GET/PUT/DELETE
// /_electric/entities/:type/:id/slash-commands) and of an entity's subscribable
// collection stream /<type>/<id>/slash-commands.

var slashRowKeys = []string{"key", "name", "description", "arguments", "source", "owner", "version", "updated_at",
	"dynamic_layers"}

// cmdChange is the answer to a PUT or DELETE of a command.
type cmdChange struct {
	Changed bool
	Txid    string
	HasTxid bool
	Command map[string]json.RawMessage // nil when the command is null
	Raw     map[string]json.RawMessage
}

func slashPath(url, name, owner string) string {
	p := entitiesPath + url + "/slash-commands/" + name
	if owner != "" {
		p += "?owner=" + owner
	}
	return p
}

func (h *harness) putCmd(url, name, owner string, body any) *response {
	h.t.Helper()
	if body == nil {
		body = "{}"
	}
	return h.do(http.MethodPut, slashPath(url, name, owner), body)
}

func (h *harness) deleteCmd(url, name, owner string) *response {
	h.t.Helper()
	return h.do(http.MethodDelete, slashPath(url, name, owner), nil)
}

// decodeCmdChange checks a 200 answer to PUT or DELETE and decodes it.
func decodeCmdChange(t *testing.T, r *response) cmdChange {
	t.Helper()
	requireStatus(t, r, http.StatusOK)
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	body := r.object(t)
	out := cmdChange{Raw: body}
	require.NoError(t, json.Unmarshal(body["changed"], &out.Changed), "body: %s", r.Body)
	if raw, ok := body["txid"]; ok {
		out.HasTxid, out.Txid = true, str(t, raw)
	}
	raw, ok := body["command"]
	require.True(t, ok, "command is always present: %s", r.Body)
	if string(raw) != "null" {
		require.NoError(t, json.Unmarshal(raw, &out.Command))
		requireFullRow(t, out.Command)
	}
	if out.Changed {
		require.ElementsMatch(t, []string{"changed", "txid", "command"}, keys(body), "body: %s", r.Body)
		require.Regexp(t, uuidRe, out.Txid)
	} else {
		require.ElementsMatch(t, []string{"changed", "command"}, keys(body), "body: %s", r.Body)
	}
	return out
}

// mustPutCmd registers and requires a change.
func (h *harness) mustPutCmd(url, name, owner string, body any) cmdChange {
	h.t.Helper()
	c := decodeCmdChange(h.t, h.putCmd(url, name, owner, body))
	require.True(h.t, c.Changed)
	return c
}

// requireFullRow checks that a row has every field (absent ones as null).
func requireFullRow(t *testing.T, row map[string]json.RawMessage) {
	t.Helper()
	require.ElementsMatch(t, slashRowKeys, keys(row))
	requireISOTime(t, row["updated_at"])
}

// rowWithoutStamps renders a row as compact JSON with updated_at (also in layers)
// replaced by "T", for comparisons of content.
func rowWithoutStamps(t *testing.T, row map[string]json.RawMessage) string {
	t.Helper()
	c := map[string]json.RawMessage{}
	for k, v := range row {
		c[k] = v
	}
	c["updated_at"] = json.RawMessage(`"T"`)
	if string(c["dynamic_layers"]) != "null" {
		var layers []map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(c["dynamic_layers"], &layers))
		for _, l := range layers {
			require.ElementsMatch(t, []string{"name", "description", "arguments", "owner", "version", "updated_at"}, keys(l))
			requireISOTime(t, l["updated_at"])
			l["updated_at"] = json.RawMessage(`"T"`)
		}
		b, err := json.Marshal(layers)
		require.NoError(t, err)
		c["dynamic_layers"] = b
	}
	b, err := json.Marshal(c)
	require.NoError(t, err)
	return string(b)
}

func (h *harness) listCmds(url string, headers ...string) (*response, []map[string]json.RawMessage) {
	h.t.Helper()
	r := h.do(http.MethodGet, entitiesPath+url+"/slash-commands", nil, headers...)
	if r.Status != http.StatusOK {
		return r, nil
	}
	require.Equal(h.t, "application/json", r.Header.Get("Content-Type"))
	var rows []map[string]json.RawMessage
	r.decode(h.t, &rows)
	require.NotNil(h.t, rows, "an empty list is [], not null")
	for _, row := range rows {
		requireFullRow(h.t, row)
	}
	return r, rows
}

func rowNames(t *testing.T, rows []map[string]json.RawMessage) []string {
	t.Helper()
	out := []string{}
	for _, r := range rows {
		out = append(out, str(t, r["name"]))
	}
	return out
}

func (h *harness) commandEvents(url string) []event { return ofType(h.events(url), "slash_command") }

// collTail is the collection stream's tail, from HEAD.
func (h *harness) collTail(url string) string {
	h.t.Helper()
	r := h.do(http.MethodHead, url+"/slash-commands", nil)
	requireStatus(h.t, r, http.StatusOK)
	tail := r.Header.Get("Stream-Next-Offset")
	require.Regexp(h.t, offsetRe, tail)
	return tail
}

// readColl reads the collection stream with the given query.
func (h *harness) readColl(url, query string, headers ...string) (*response, []event) {
	h.t.Helper()
	r := h.do(http.MethodGet, url+"/slash-commands?"+query, nil, headers...)
	if r.Status != http.StatusOK {
		return r, nil
	}
	require.Equal(h.t, "application/json", r.Header.Get("Content-Type"))
	return r, parseEvents(h.t, r.Body)
}

func requireSnapshot(t *testing.T, events []event, tail string, rows []map[string]json.RawMessage) {
	t.Helper()
	require.Len(t, events, len(rows)+2)
	require.JSONEq(t, `{"headers":{"control":"snapshot-start","offset":"`+tail+`"}}`, string(events[0].Raw))
	require.JSONEq(t, `{"headers":{"control":"snapshot-end","offset":"`+tail+`"}}`, string(events[len(events)-1].Raw))
	for i, row := range rows {
		ev := events[i+1]
		require.Equal(t, "slash_command", ev.Type)
		require.Equal(t, str(t, row["name"]), ev.Key)
		require.Equal(t, map[string]string{"operation": "insert"}, ev.Headers)
		var obj map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(ev.Raw, &obj))
		require.ElementsMatch(t, []string{"type", "key", "value", "headers"}, keys(obj))
		b, err := json.Marshal(row)
		require.NoError(t, err)
		require.JSONEq(t, string(b), string(obj["value"]), "the snapshot's rows are the listed rows")
	}
}

func TestSlashCommandsList(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d","slash_commands":[
		{"name":"zeta","description":"Last"},
		{"name":"alpha","arguments":[{"name":"n","type":"number","required":true}]}]}`)
	h.mustSpawn("chat", "one", nil)

	r, rows := h.listCmds("/chat/one")
	requireStatus(t, r, http.StatusOK)
	require.Equal(t, []string{"alpha", "zeta"}, rowNames(t, rows))
	require.JSONEq(t, `{"key":"alpha","name":"alpha","description":null,"arguments":[{"name":"n","type":"number","required":true}],
		"source":"static","owner":null,"version":null,"updated_at":"T","dynamic_layers":null}`, rowWithoutStamps(t, rows[0]))
	require.JSONEq(t, `{"key":"zeta","name":"zeta","description":"Last","arguments":null,
		"source":"static","owner":null,"version":null,"updated_at":"T","dynamic_layers":null}`, rowWithoutStamps(t, rows[1]))

	// ETag: stable while nothing changes, 304 on a match.
	etag := r.Header.Get("ETag")
	require.NotEmpty(t, etag)
	r2, rows2 := h.listCmds("/chat/one")
	require.Equal(t, etag, r2.Header.Get("ETag"))
	require.Equal(t, rows, rows2)
	r = h.do(http.MethodGet, entitiesPath+"/chat/one/slash-commands", nil, "If-None-Match", etag)
	requireStatus(t, r, http.StatusNotModified)
	require.Empty(t, r.Body)
	require.Equal(t, etag, r.Header.Get("ETag"))

	// A PUT changes the list and the ETag; an old ETag gets the new list.
	h.mustPutCmd("/chat/one", "mid", "o", `{"description":"Middle"}`)
	r, rows = h.listCmds("/chat/one", "If-None-Match", etag)
	requireStatus(t, r, http.StatusOK)
	require.Equal(t, []string{"alpha", "mid", "zeta"}, rowNames(t, rows))
	etag2 := r.Header.Get("ETag")
	require.NotEqual(t, etag, etag2)

	// An identical PUT changes nothing, not even the ETag.
	require.False(t, decodeCmdChange(t, h.putCmd("/chat/one", "mid", "o", `{"description":"Middle"}`)).Changed)
	requireStatus(t, h.do(http.MethodGet, entitiesPath+"/chat/one/slash-commands", nil, "If-None-Match", etag2),
		http.StatusNotModified)

	// A type without commands: [].
	h.registerType(`{"name":"bare","description":"d"}`)
	h.mustSpawn("bare", "one", nil)
	r, rows = h.listCmds("/bare/one")
	requireStatus(t, r, http.StatusOK)
	require.Empty(t, rows)

	requireError(t, h.do(http.MethodGet, entitiesPath+"/chat/ghost/slash-commands", nil), http.StatusNotFound,
		"NOT_FOUND", "Entity not found at /chat/ghost")
	requireError(t, h.do(http.MethodGet, entitiesPath+"/nope/one/slash-commands", nil), http.StatusNotFound,
		"UNKNOWN_ENTITY_TYPE", "Entity type not found: nope")
}

func TestSlashCommandsPutAndDelete(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d","slash_commands":[{"name":"review","description":"Review the change"}]}`)
	h.mustSpawn("chat", "one", nil)
	const u = "/chat/one"
	seeded := h.commandEvents(u)
	require.Len(t, seeded, 1)
	afterSeed := h.collTail(u)

	// PUT with an owner: changed, the txid of the events, the effective command.
	local := h.mustPutCmd(u, "review", "local", `{"description":"Local review"}`)
	require.JSONEq(t, `{"key":"review","name":"review","description":"Local review","arguments":null,"source":"dynamic",
		"owner":"local","version":null,"updated_at":"T","dynamic_layers":[
		{"name":"review","description":"Local review","arguments":null,"owner":"local","version":null,"updated_at":"T"}]}`,
		rowWithoutStamps(t, local.Command))
	evs := h.commandEvents(u)
	require.Len(t, evs, 2)
	last := evs[1]
	require.Equal(t, "update", last.Headers["operation"])
	require.Equal(t, local.Txid, last.Headers["txid"])
	require.JSONEq(t, string(local.Raw["command"]), string(mustMarshal(t, last.Value)),
		"the answer's command is the event's row")

	// The same PUT again: not changed, no txid, no event.
	same := decodeCmdChange(t, h.putCmd(u, "review", "local", `{"description":"Local review"}`))
	require.False(t, same.Changed)
	require.Equal(t, local.Command, same.Command)
	require.Len(t, h.commandEvents(u), 2)

	// A second owner with a version and arguments goes on top.
	skills := h.mustPutCmd(u, "review", "skills", `{"name":"review","description":"Skills review","version":"2",
		"arguments":[{"name":"pr","type":"number","required":true,"description":"PR number"}]}`)
	require.JSONEq(t, `{"key":"review","name":"review","description":"Skills review",
		"arguments":[{"name":"pr","type":"number","required":true,"description":"PR number"}],"source":"dynamic",
		"owner":"skills","version":"2","updated_at":"T","dynamic_layers":[
		{"name":"review","description":"Local review","arguments":null,"owner":"local","version":null,"updated_at":"T"},
		{"name":"review","description":"Skills review","arguments":[{"name":"pr","type":"number","required":true,"description":"PR number"}],
		 "owner":"skills","version":"2","updated_at":"T"}]}`, rowWithoutStamps(t, skills.Command))
	require.NotEqual(t, local.Txid, skills.Txid)

	// No owner is the default owner "handler".
	handler := h.mustPutCmd(u, "extra", "", `{}`)
	require.Equal(t, `"handler"`, string(handler.Command["owner"]))
	require.Equal(t, "null", string(handler.Command["description"]))

	// DELETE without owner removes the top layer: local shows again, with its stamp.
	c := decodeCmdChange(t, h.deleteCmd(u, "review", ""))
	require.True(t, c.Changed)
	require.Equal(t, compact(t, local.Raw["command"]), compact(t, c.Raw["command"]))
	// then the static command, with null owner, version and layers
	c = decodeCmdChange(t, h.deleteCmd(u, "review", "local"))
	require.True(t, c.Changed)
	require.JSONEq(t, `{"key":"review","name":"review","description":"Review the change","arguments":null,"source":"static",
		"owner":null,"version":null,"updated_at":"T","dynamic_layers":null}`, rowWithoutStamps(t, c.Command))
	// a static command cannot be removed
	c = decodeCmdChange(t, h.deleteCmd(u, "review", ""))
	require.False(t, c.Changed)
	require.Equal(t, `"static"`, string(c.Command["source"]))
	c = decodeCmdChange(t, h.deleteCmd(u, "review", "nobody"))
	require.False(t, c.Changed)

	// A dynamic-only command is removed with its last layer.
	_, rows := h.listCmds(u)
	require.Equal(t, []string{"extra", "review"}, rowNames(t, rows))
	c = decodeCmdChange(t, h.deleteCmd(u, "extra", "handler"))
	require.True(t, c.Changed)
	require.Nil(t, c.Command)
	_, rows = h.listCmds(u)
	require.Equal(t, []string{"review"}, rowNames(t, rows))
	c = decodeCmdChange(t, h.deleteCmd(u, "extra", ""))
	require.False(t, c.Changed)
	require.Nil(t, c.Command)
	c = decodeCmdChange(t, h.deleteCmd(u, "never", ""))
	require.False(t, c.Changed)

	// Every change is one event with its txid, on the main stream and, byte for byte, on
	// the collection stream.
	evs = h.commandEvents(u)
	var ops []string
	for _, ev := range evs[1:] {
		ops = append(ops, ev.Key+":"+ev.Headers["operation"])
		require.Regexp(t, uuidRe, ev.Headers["txid"])
		if ev.Headers["operation"] == "delete" {
			require.Nil(t, ev.Value)
			require.NotContains(t, string(ev.Raw), `"value"`)
		} else {
			requireFullRow(t, ev.Value)
		}
	}
	require.Equal(t, []string{"review:update", "review:update", "extra:insert", "review:update", "review:update", "extra:delete"}, ops)
	r, coll := h.readColl(u, "offset="+afterSeed)
	requireStatus(t, r, http.StatusOK)
	require.Equal(t, "true", r.Header.Get("Stream-Up-To-Date"))
	require.Len(t, coll, len(evs)-1)
	for i, ev := range coll {
		require.Equal(t, stored(evs[i+1].Raw), stored(ev.Raw))
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func TestSlashCommandsRejects(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d","slash_commands":[{"name":"review"}]}`)
	h.mustSpawn("chat", "one", nil)
	const u = "/chat/one"
	h.mustPutCmd(u, "mine", "me", nil)
	events := len(h.events(u))

	kebab := "must be a lowercase kebab-case command name"
	requireValidationFailed(t, h.putCmd(u, "Bad", "me", nil), detail{"/name", kebab})
	requireValidationFailed(t, h.putCmd(u, "a--b", "me", nil), detail{"/name", kebab})
	requireValidationFailed(t, h.putCmd(u, url.PathEscape("/lead"), "me", nil), detail{"/name", kebab})
	requireValidationFailed(t, h.putCmd(u, strings.Repeat("n", 65), "me", nil), detail{"/name", "must be at most 64 characters"})
	requireValidationFailed(t, h.putCmd(u, "ok", "me", map[string]any{"description": strings.Repeat("d", 1001)}),
		detail{"/description", "must be at most 1000 characters"})
	args := make([]map[string]string, 33)
	for i := range args {
		args[i] = map[string]string{"name": fmt.Sprintf("a%d", i), "type": "string"}
	}
	requireValidationFailed(t, h.putCmd(u, "ok", "me", map[string]any{"arguments": args}),
		detail{"/arguments", "must contain at most 32 arguments"})
	requireValidationFailed(t, h.putCmd(u, "ok", "me", `{"arguments":[{"name":"x","type":"string"},{"name":"x","type":"number"}]}`),
		detail{"/arguments/1/name", "must be unique"})

	// The shape of the body: 400.
	requireSchemaMismatch(t, h.putCmd(u, "ok", "me", `{"description":"d","extra":1}`),
		detail{"/extra", "must NOT have additional properties"})
	requireSchemaMismatch(t, h.putCmd(u, "ok", "me", `{"name":"other"}`),
		detail{"/name", "must equal the command name in the URL"})
	requireSchemaMismatch(t, h.putCmd(u, "ok", "me", `{"description":5}`), detail{"/description", "must be string"})
	requireSchemaMismatch(t, h.putCmd(u, "ok", "me", `{"arguments":[{"name":"n","type":"date","extra":true}]}`),
		detail{"/arguments/0/extra", "must NOT have additional properties"},
		detail{"/arguments/0/type", "must be equal to one of the allowed values"})
	requireSchemaMismatch(t, h.putCmd(u, "ok", "me", `[]`), detail{"/", "must be object"})
	requireError(t, h.putCmd(u, "ok", "me", `{"description":`), http.StatusBadRequest, "INVALID_REQUEST", "Invalid JSON body")

	require.Len(t, h.events(u), events, "refusals write nothing")
	_, rows := h.listCmds(u)
	require.Equal(t, []string{"mine", "review"}, rowNames(t, rows))

	// Unknown entities and types.
	requireError(t, h.putCmd("/chat/ghost", "ok", "me", nil), http.StatusNotFound, "NOT_FOUND", "Entity not found at /chat/ghost")
	requireError(t, h.deleteCmd("/chat/ghost", "ok", ""), http.StatusNotFound, "NOT_FOUND", "Entity not found at /chat/ghost")
	requireError(t, h.putCmd("/nope/one", "ok", "me", nil), http.StatusNotFound, "UNKNOWN_ENTITY_TYPE", "Entity type not found: nope")

	// A killed entity takes no changes, but a no-op is still answered and GET works.
	requireStatus(t, h.do(http.MethodDelete, entitiesPath+u, nil), http.StatusOK)
	events = len(h.events(u))
	requireError(t, h.putCmd(u, "late", "me", nil), http.StatusConflict, "NOT_RUNNING", "Entity is not accepting writes")
	requireError(t, h.deleteCmd(u, "mine", ""), http.StatusConflict, "NOT_RUNNING", "Entity is not accepting writes")
	require.False(t, decodeCmdChange(t, h.putCmd(u, "mine", "me", nil)).Changed)
	require.Len(t, h.events(u), events)
	r, rows := h.listCmds(u)
	requireStatus(t, r, http.StatusOK)
	require.Equal(t, []string{"mine", "review"}, rowNames(t, rows))
}

func TestSlashCommandsLimitPerEntity(t *testing.T) {
	h := setup(t)
	cmds := make([]map[string]string, 500)
	for i := range cmds {
		cmds[i] = map[string]string{"name": fmt.Sprintf("cmd-%03d", i)}
	}
	body, err := json.Marshal(map[string]any{"name": "big", "description": "d", "slash_commands": cmds})
	require.NoError(t, err)
	h.registerType(string(body))
	h.mustSpawn("big", "one", nil)
	events := len(h.events("/big/one"))

	requireDetails(t, h.putCmd("/big/one", "one-more", "me", nil), http.StatusUnprocessableEntity,
		"SCHEMA_VALIDATION_FAILED", "Too many slash commands", detail{"/", "an entity can have at most 500 slash commands"})
	// A layer over an existing command does not add one.
	h.mustPutCmd("/big/one", "cmd-000", "me", `{"description":"over"}`)
	require.Len(t, h.events("/big/one"), events+1)
	_, rows := h.listCmds("/big/one")
	require.Len(t, rows, 500)
}

func TestCollectionStreamReads(t *testing.T) {
	h := setup(t, testserver.Options{API: api.Config{LongPollTimeout: 10 * time.Second}})
	h.registerType(`{"name":"chat","description":"d","slash_commands":[{"name":"review","description":"Review"},{"name":"help"}]}`)
	h.mustSpawn("chat", "one", nil)
	const u = "/chat/one"
	h.mustPutCmd(u, "review", "a", `{"description":"A"}`)

	// From the start: the snapshot, at the tail.
	tail := h.collTail(u)
	_, rows := h.listCmds(u)
	for _, q := range []string{"offset=-1", ""} {
		r, events := h.readColl(u, q)
		requireStatus(t, r, http.StatusOK)
		require.Equal(t, tail, r.Header.Get("Stream-Next-Offset"), q)
		require.Equal(t, "true", r.Header.Get("Stream-Up-To-Date"), q)
		require.Empty(t, r.Header.Get("Stream-Closed"))
		requireSnapshot(t, events, tail, rows)
	}
	require.Equal(t, []string{"help", "review"}, rowNames(t, rows))

	// An explicit offset, even the very first one, reads the changes after it (the
	// history), not a snapshot: the spawn's two inserts and the update.
	r0, history := h.readColl(u, "offset=0000000000000000_0000000000000000")
	requireStatus(t, r0, http.StatusOK)
	require.Equal(t, tail, r0.Header.Get("Stream-Next-Offset"))
	require.Len(t, history, 3)

	// From the tail: nothing yet.
	r, events := h.readColl(u, "offset="+tail)
	requireStatus(t, r, http.StatusOK)
	require.Empty(t, events)
	require.Equal(t, tail, r.Header.Get("Stream-Next-Offset"))
	require.Equal(t, "true", r.Header.Get("Stream-Up-To-Date"))

	// After a PUT, exactly its update event, the same bytes as on the main stream.
	c := h.mustPutCmd(u, "review", "b", `{"description":"B"}`)
	r, events = h.readColl(u, "offset="+tail)
	requireStatus(t, r, http.StatusOK)
	require.Len(t, events, 1)
	require.Equal(t, "update", events[0].Headers["operation"])
	require.Equal(t, c.Txid, events[0].Headers["txid"])
	mainEvents := h.commandEvents(u)
	require.Equal(t, stored(mainEvents[len(mainEvents)-1].Raw), stored(events[0].Raw))
	tail2 := r.Header.Get("Stream-Next-Offset")
	require.Greater(t, tail2, tail)
	require.Equal(t, tail2, h.collTail(u))

	// A long-poll from the tail waits, then wakes up on a PUT.
	type result struct {
		r      *response
		events []event
	}
	done := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, h.srv.URL+u+"/slash-commands?offset="+tail2+"&live=long-poll", nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- result{}
			return
		}
		defer res.Body.Close()
		var body []byte
		buf := make([]byte, 4096)
		for {
			n, err := res.Body.Read(buf)
			body = append(body, buf[:n]...)
			if err != nil {
				break
			}
		}
		done <- result{r: &response{Status: res.StatusCode, Header: res.Header, Body: body}}
	}()
	select {
	case <-done:
		t.Fatal("the long-poll answered before anything changed")
	case <-time.After(300 * time.Millisecond):
	}
	c = h.mustPutCmd(u, "review", "c", `{"description":"C"}`)
	var lp result
	select {
	case lp = <-done:
	case <-time.After(8 * time.Second):
		t.Fatal("the long-poll did not wake up on the PUT")
	}
	require.NotNil(t, lp.r)
	requireStatus(t, lp.r, http.StatusOK)
	lpEvents := parseEvents(t, lp.r.Body)
	require.Len(t, lpEvents, 1)
	require.Equal(t, c.Txid, lpEvents[0].Headers["txid"])
	require.Equal(t, "c", str(t, lpEvents[0].Value["owner"]))
	require.Equal(t, "true", lp.r.Header.Get("Stream-Up-To-Date"))
	require.NotEmpty(t, lp.r.Header.Get("Stream-Cursor"))
	tail3 := lp.r.Header.Get("Stream-Next-Offset")
	require.Equal(t, h.collTail(u), tail3)

	// SSE from the start: the snapshot first, then up to date, then live changes.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.srv.URL+u+"/slash-commands?offset=-1&live=sse", nil)
	require.NoError(t, err)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	sse := readSSE(res)

	_, rows = h.listCmds(u)
	first := nextSSE(t, sse)
	require.Equal(t, "data", first.name)
	requireSnapshot(t, parseEvents(t, []byte(first.data)), tail3, rows)
	ctl := nextSSE(t, sse)
	require.Equal(t, "control", ctl.name)
	var control map[string]any
	require.NoError(t, json.Unmarshal([]byte(ctl.data), &control))
	require.Equal(t, tail3, control["streamNextOffset"])
	require.Equal(t, true, control["upToDate"])
	require.NotContains(t, control, "streamClosed")

	c = decodeCmdChange(t, h.deleteCmd(u, "review", ""))
	require.True(t, c.Changed)
	live := nextSSE(t, sse)
	require.Equal(t, "data", live.name)
	liveEvents := parseEvents(t, []byte(live.data))
	require.Len(t, liveEvents, 1)
	require.Equal(t, c.Txid, liveEvents[0].Headers["txid"])
	require.Equal(t, "b", str(t, liveEvents[0].Value["owner"]), "c's layer is gone, b shows")
	ctl = nextSSE(t, sse)
	require.Equal(t, "control", ctl.name)
	require.NoError(t, json.Unmarshal([]byte(ctl.data), &control))
	tail4 := h.collTail(u)
	require.Equal(t, tail4, control["streamNextOffset"])
	require.Equal(t, true, control["upToDate"])
	cancel()

	// The collection is written only through the command API.
	requireError(t, h.do(http.MethodPost, u+"/slash-commands", `[{"type":"slash_command","key":"x","value":{},"headers":{"operation":"insert"}}]`),
		http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED",
		"The slash-command collection is written through PUT and DELETE /_electric/entities/:type/:id/slash-commands/:name")
	requireStatus(t, h.do(http.MethodPut, u+"/slash-commands", nil), http.StatusMethodNotAllowed)
	requireStatus(t, h.do(http.MethodDelete, u+"/slash-commands", nil), http.StatusMethodNotAllowed)
	require.Equal(t, tail4, h.collTail(u))

	// Killing the entity closes the collection.
	requireStatus(t, h.do(http.MethodDelete, entitiesPath+u, nil), http.StatusOK)
	r, events = h.readColl(u, "offset="+tail4)
	requireStatus(t, r, http.StatusOK)
	require.Empty(t, events)
	require.Equal(t, "true", r.Header.Get("Stream-Closed"))
	require.Equal(t, "true", r.Header.Get("Stream-Up-To-Date"))
	require.Equal(t, tail4, r.Header.Get("Stream-Next-Offset"))
	r, events = h.readColl(u, "offset=-1")
	requireStatus(t, r, http.StatusOK)
	require.Equal(t, "true", r.Header.Get("Stream-Closed"))
	_, rows = h.listCmds(u)
	requireSnapshot(t, events, tail4, rows)
	r = h.do(http.MethodGet, u+"/slash-commands?offset="+tail4+"&live=long-poll", nil)
	requireStatus(t, r, http.StatusNoContent)
	require.Equal(t, "true", r.Header.Get("Stream-Closed"))

	// Collections of unknown entities do not exist.
	requireStatus(t, h.do(http.MethodGet, "/chat/ghost/slash-commands?offset=-1", nil), http.StatusNotFound)
}

type sseEvent struct {
	name string
	data string
}

// readSSE parses an event stream into a channel (closed at the end of the body).
func readSSE(res *http.Response) <-chan sseEvent {
	ch := make(chan sseEvent, 16)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var ev sseEvent
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" || data != nil {
					ev.data = strings.Join(data, "\n")
					ch <- ev
				}
				ev, data = sseEvent{}, nil
			case strings.HasPrefix(line, ":"):
			case strings.HasPrefix(line, "event:"):
				ev.name = strings.TrimPrefix(strings.TrimPrefix(line, "event:"), " ")
			case strings.HasPrefix(line, "data:"):
				data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
			}
		}
	}()
	return ch
}

func nextSSE(t *testing.T, ch <-chan sseEvent) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-ch:
		require.True(t, ok, "the event stream ended early")
		return ev
	case <-time.After(8 * time.Second):
		t.Fatal("no SSE event")
		return sseEvent{}
	}
}

// A picker following an entity with no commands at all parks at the collection's tail
// (0_0) instead of receiving the empty snapshot over and over.
func TestEmptyCollectionLongPollWaits(t *testing.T) {
	h := setup(t, testserver.Options{API: api.Config{LongPollTimeout: 300 * time.Millisecond}})
	h.registerType(`{"name":"bare","description":"no commands"}`)
	h.mustSpawn("bare", "one", nil)
	r, events := h.readColl("/bare/one", "offset=-1")
	requireStatus(t, r, http.StatusOK)
	tail := r.Header.Get("Stream-Next-Offset")
	require.Equal(t, "0000000000000000_0000000000000000", tail)
	require.Len(t, events, 2, "snapshot-start and snapshot-end only")

	start := time.Now()
	r, _ = h.readColl("/bare/one", "offset="+tail+"&live=long-poll")
	requireStatus(t, r, http.StatusNoContent)
	require.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond, "the long-poll waited for a change")
}
