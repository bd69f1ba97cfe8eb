package wakereg_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/internal/quota"
	"github.com/entityd/entityd/internal/testserver"
)

// A child spawned with wake:{runFinished} wakes its parent once per finished run, with
// finished_child carrying the run's text; includeResponse:false leaves the text out.
func TestChildRunFinishedWakesParentOnce(t *testing.T) {
	t.Parallel()
	srv := start(t)
	c := client{t: t, base: srv.URL}
	c.registerType("manager")
	c.registerType("worker")
	c.spawn("/manager/m1", "")
	tok := c.spawn("/worker/w1", `"parent":"/manager/m1","wake":{"subscriberUrl":"/manager/m1","condition":"runFinished","manifestKey":"child:worker:w1"}`)

	c.finishRun("/worker/w1", tok, "run-1", "Hello", ", world")
	w := c.waitWakes("/manager/m1", 1)
	require.Len(t, w, 1)
	require.True(t, strings.HasPrefix(w[0].Key, "wake-"), w[0].Key)
	v := value(t, w[0])
	require.Equal(t, "/worker/w1", v.Source)
	require.False(t, v.Timeout)
	require.Len(t, v.Changes, 1)
	require.JSONEq(t, `{"collection":"runs","kind":"update","key":"run-1"}`, string(v.Changes[0]))
	require.NotNil(t, v.FinishedChild)
	require.Equal(t, "/worker/w1", v.FinishedChild.URL)
	require.Equal(t, "worker", v.FinishedChild.Type)
	require.Equal(t, "completed", v.FinishedChild.RunStatus)
	require.NotNil(t, v.FinishedChild.Response)
	require.Equal(t, "Hello, world", *v.FinishedChild.Response)

	// a failed run: its errors, not another run's text
	c.write("/worker/w1", tok, runEvent("run-2", "insert", "started"), textDelta("run-2", "0", "partial"),
		`{"type":"error","key":"e1","value":{"run_id":"run-2","error_code":"X","message":"boom"},"headers":{"operation":"insert"}}`,
		runEvent("run-2", "update", "failed"))
	w = c.waitWakes("/manager/m1", 2)
	require.Len(t, w, 2, "one wake per finished run")
	v = value(t, w[1])
	require.Equal(t, "failed", v.FinishedChild.RunStatus)
	require.Equal(t, "partial", *v.FinishedChild.Response)
	require.Equal(t, "boom", *v.FinishedChild.Error)
	require.NotEqual(t, w[0].Key, w[1].Key)

	// events that finish no run wake nobody: a third run's wake is the next one
	c.write("/worker/w1", tok, runEvent("run-3", "insert", "started"), textDelta("run-3", "0", "x"))
	c.finishRun("/worker/w1", tok, "run-4", "four")
	w = c.waitWakes("/manager/m1", 3)
	require.Len(t, w, 3)
	require.Equal(t, "four", *value(t, w[2]).FinishedChild.Response)

	// includeResponse:false: finished_child without the text
	tok2 := c.spawn("/worker/w2", `"parent":"/manager/m1","wake":{"subscriberUrl":"/manager/m1","condition":"runFinished","includeResponse":false}`)
	c.finishRun("/worker/w2", tok2, "r", "secret")
	w = c.waitWakes("/manager/m1", 4)
	v = value(t, w[3])
	require.Equal(t, "/worker/w2", v.FinishedChild.URL)
	require.Nil(t, v.FinishedChild.Response)

	// an observed entity that is not a child: a wake without finished_child
	tok3 := c.spawn("/worker/w3", "")
	c.must(http.StatusNoContent, "POST", "/_electric/wake", `{"subscriberUrl":"/manager/m1","sourceUrl":"/worker/w3","condition":"runFinished"}`)
	c.finishRun("/worker/w3", tok3, "r", "text")
	w = c.waitWakes("/manager/m1", 5)
	v = value(t, w[4])
	require.Equal(t, "/worker/w3", v.Source)
	require.Nil(t, v.FinishedChild)
	require.Len(t, c.wakes("/manager/m1"), 5)
}

// Change conditions: collections and ops filter; inbox changes carry the message.
func TestChangeWakes(t *testing.T) {
	t.Parallel()
	srv := start(t)
	c := client{t: t, base: srv.URL}
	c.registerType("obs")
	c.spawn("/obs/watcher", "")
	c.spawn("/obs/inboxes", "")
	tok := c.spawn("/obs/src", "")
	c.must(http.StatusNoContent, "POST", "/_electric/wake", `{"subscriberUrl":"/obs/watcher","sourceUrl":"/obs/src",
		"condition":{"on":"change","collections":["note"],"ops":["update","insert"],"debounceMs":5}}`)
	c.must(http.StatusNoContent, "POST", "/_electric/wake", `{"subscriberUrl":"/obs/inboxes","sourceUrl":"/obs/src",
		"condition":{"on":"change","collections":["inbox"]}}`)
	c.write("/obs/src", tok,
		`{"type":"other","key":"o","value":{},"headers":{"operation":"insert"}}`,
		`{"type":"note","key":"n1","value":{"value":{"text":"a"}},"headers":{"operation":"upsert"}}`,
		`{"type":"note","key":"n1","value":{},"headers":{"operation":"delete"}}`)
	w := c.waitWakes("/obs/watcher", 1)
	v := value(t, w[0])
	require.Len(t, v.Changes, 1, "upsert counts as insert; the delete is filtered out")
	require.JSONEq(t, `{"collection":"note","kind":"insert","key":"n1","value":{"text":"a"}}`, string(v.Changes[0]))

	c.must(http.StatusOK, "POST", "/_electric/entities/obs/src/send", `{"payload":{"q":1},"type":"ask"}`)
	w = c.waitWakes("/obs/inboxes", 1)
	var ch map[string]any
	require.NoError(t, json.Unmarshal(value(t, w[0]).Changes[0], &ch))
	require.Equal(t, "inbox", ch["collection"])
	require.NotEmpty(t, ch["from"])
	require.Equal(t, map[string]any{"q": float64(1)}, ch["payload"])
	require.Equal(t, "ask", ch["message_type"])
	require.NotEmpty(t, ch["timestamp"])
}

// debounceMs batches changes into one wake; timeoutMs delivers {timeout:true} once when
// nothing matched in time.
func TestDebounceAndTimeout(t *testing.T) {
	t.Parallel()
	srv := start(t)
	c := client{t: t, base: srv.URL}
	c.registerType("obs")
	c.spawn("/obs/batched", "")
	c.spawn("/obs/patient", "")
	tok := c.spawn("/obs/src", "")
	c.must(http.StatusNoContent, "POST", "/_electric/wake", `{"subscriberUrl":"/obs/batched","sourceUrl":"/obs/src",
		"condition":{"on":"change","collections":["note"]},"debounceMs":400}`)
	c.must(http.StatusNoContent, "POST", "/_electric/wake", `{"subscriberUrl":"/obs/patient","sourceUrl":"/obs/src",
		"condition":{"on":"change","collections":["never"]},"timeoutMs":300}`)
	for i := range 3 {
		c.write("/obs/src", tok, fmt.Sprintf(`{"type":"note","key":"n%d","value":{},"headers":{"operation":"insert"}}`, i))
	}
	w := c.waitWakes("/obs/batched", 1)
	v := value(t, w[0])
	require.Len(t, v.Changes, 3, "the three changes in one wake")
	require.False(t, v.Timeout)

	w = c.waitWakes("/obs/patient", 1)
	v = value(t, w[0])
	require.True(t, v.Timeout)
	require.Empty(t, v.Changes)
	require.Equal(t, "/obs/src", v.Source)
	require.True(t, strings.HasSuffix(w[0].Key, "-timeout"), w[0].Key)

	// the timeout is delivered once: the next wake of the patient one is a match
	c.write("/obs/src", tok, `{"type":"never","key":"x","value":{},"headers":{"operation":"insert"}}`)
	w = c.waitWakes("/obs/patient", 2)
	require.Len(t, w, 2)
	require.False(t, value(t, w[1]).Timeout)
}

// Unregistering (by source, by manifest key) stops the wakes; killing the subscriber or
// the source drops its registrations.
func TestUnregisterAndKill(t *testing.T) {
	t.Parallel()
	srv := start(t, testserver.Options{API: api.Config{Quotas: quota.Limits{WakeRegistrations: 3}}})
	c := client{t: t, base: srv.URL, as: "user:alice"}
	c.registerType("obs")
	c.spawn("/obs/a", "")
	c.spawn("/obs/b", "")
	c.spawn("/obs/signal", "")
	tok := c.spawn("/obs/src", "")
	change := `"condition":{"on":"change"}`
	c.must(http.StatusNoContent, "POST", "/_electric/wake", `{"subscriberUrl":"/obs/a","sourceUrl":"/obs/src",`+change+`}`)
	c.must(http.StatusNoContent, "POST", "/_electric/wake", `{"subscriberUrl":"/obs/b","sourceUrl":"/obs/src","manifestKey":"k",`+change+`}`)
	c.must(http.StatusNoContent, "POST", "/_electric/wake", `{"subscriberUrl":"/obs/signal","sourceUrl":"/obs/src",`+change+`}`)
	status, out := c.wake(`{"subscriberUrl":"/obs/signal","sourceUrl":"/obs/a",` + change + `}`)
	require.Equal(t, http.StatusTooManyRequests, status, out)
	require.Contains(t, out, "QUOTA_EXCEEDED")

	status, out = c.wake(`{"subscriberUrl":"/obs/a"}`)
	require.Equal(t, http.StatusBadRequest, status, out)
	status, _, _ = c.call("POST", "/_electric/wake/unregister", `{"subscriberUrl":"/obs/a"}`)
	require.Equal(t, http.StatusBadRequest, status)
	_, out, _ = c.call("POST", "/_electric/wake/unregister", `{"subscriberUrl":"/obs/a"}`)
	require.Contains(t, out, `"INVALID_WAKE_UNREGISTER"`)

	c.must(http.StatusNoContent, "POST", "/_electric/wake/unregister", `{"subscriberUrl":"/obs/a","sourceUrl":"/obs/src"}`)
	c.must(http.StatusNoContent, "POST", "/_electric/wake/unregister", `{"subscriberUrl":"/obs/b","manifestKey":"k"}`)
	c.write("/obs/src", tok, `{"type":"note","key":"n","value":{},"headers":{"operation":"insert"}}`)
	c.waitWakes("/obs/signal", 1) // evaluated: the same pass would have woken a and b
	require.Empty(t, c.wakes("/obs/a"))
	require.Empty(t, c.wakes("/obs/b"))

	// SIGKILL of the subscriber drops its registration: the quota has room again
	c.must(http.StatusNoContent, "POST", "/_electric/wake", `{"subscriberUrl":"/obs/a","sourceUrl":"/obs/src",`+change+`}`)
	c.must(http.StatusNoContent, "POST", "/_electric/wake", `{"subscriberUrl":"/obs/b","sourceUrl":"/obs/src",`+change+`}`)
	status, _ = c.wake(`{"subscriberUrl":"/obs/b","sourceUrl":"/obs/signal",` + change + `}`)
	require.Equal(t, http.StatusTooManyRequests, status)
	c.must(http.StatusOK, "DELETE", "/_electric/entities/obs/a", "")
	c.must(http.StatusNoContent, "POST", "/_electric/wake", `{"subscriberUrl":"/obs/b","sourceUrl":"/obs/signal",`+change+`}`)
	// and of the source: every registration on it goes
	c.must(http.StatusOK, "DELETE", "/_electric/entities/obs/src", "")
	c.must(http.StatusNoContent, "POST", "/_electric/wake", `{"subscriberUrl":"/obs/b","sourceUrl":"/obs/b",`+change+`}`)
	c.must(http.StatusNoContent, "POST", "/_electric/wake", `{"subscriberUrl":"/obs/signal","sourceUrl":"/obs/b",`+change+`}`)
}

// Who may register: write on the subscriber and read on the source; both must exist.
func TestRegistrationAccess(t *testing.T) {
	t.Parallel()
	srv := start(t)
	alice := client{t: t, base: srv.URL, as: "user:alice"}
	bob := client{t: t, base: srv.URL, as: "user:bob"}
	alice.registerType("vault")
	alice.spawn("/vault/v1", "")
	alice.must(http.StatusCreated, "PUT", "/alice-notes", "", "Content-Type", "application/json")
	bob.registerType("bobs")
	bob.spawn("/bobs/b1", "")

	for _, tc := range []struct {
		who    client
		body   string
		status int
		code   string
	}{
		// bob may not watch alice's entity, nor her plain stream, from his own
		{bob, `{"subscriberUrl":"/bobs/b1","sourceUrl":"/vault/v1","condition":"runFinished"}`, 401, "UNAUTHORIZED"},
		{bob, `{"subscriberUrl":"/bobs/b1","sourceUrl":"/alice-notes","condition":{"on":"change"}}`, 403, "FORBIDDEN"},
		// nor make alice's entity watch his
		{bob, `{"subscriberUrl":"/vault/v1","sourceUrl":"/bobs/b1","condition":"runFinished"}`, 401, "UNAUTHORIZED"},
		// nor a wake through a spawn's body on alice's entity
		{alice, `{"subscriberUrl":"/vault/nope","sourceUrl":"/vault/v1","condition":"runFinished"}`, 404, "NOT_FOUND"},
		{alice, `{"subscriberUrl":"/vault/v1","sourceUrl":"/vault/nope","condition":"runFinished"}`, 404, "NOT_FOUND"},
		{alice, `{"subscriberUrl":"/vault/v1","sourceUrl":"/no-such-stream","condition":"runFinished"}`, 404, "STREAM_NOT_FOUND"},
		{alice, `{"subscriberUrl":"/vault/v1","sourceUrl":"/vault/v1","condition":"sometimes"}`, 400, "INVALID_REQUEST"},
		{alice, `{"subscriberUrl":"/vault/v1","sourceUrl":"/vault/v1","condition":{"on":"change","ops":["upsert"]}}`, 400, "INVALID_REQUEST"},
		{alice, `{"subscriberUrl":"/vault/v1","sourceUrl":"/vault/v1","condition":"runFinished","debounceMs":-1}`, 400, "INVALID_REQUEST"},
		{alice, `{"subscriberUrl":"/vault/v1","condition":"runFinished"}`, 400, "INVALID_REQUEST"},
		{alice, `[1]`, 400, "INVALID_REQUEST"},
		{alice, `{"subscriberUrl":"/vault/v1","sourceUrl":"/alice-notes","condition":{"on":"change"}}`, 204, ""},
		{alice, `{"subscriberUrl":"/vault/v1","sourceUrl":"/vault/v1","condition":"runFinished","extra":true}`, 204, ""},
	} {
		status, out := tc.who.wake(tc.body)
		require.Equal(t, tc.status, status, "%s as %s: %s", tc.body, tc.who.as, out)
		if tc.code != "" {
			require.Contains(t, out, `"code":"`+tc.code+`"`, out)
		}
	}
	// a spawn whose wake goes to an entity the caller may not write is refused whole
	status, out, _ := bob.call("PUT", "/_electric/entities/bobs/b2", `{"wake":{"subscriberUrl":"/vault/v1","condition":"runFinished"}}`)
	require.Equal(t, http.StatusUnauthorized, status, out)
	status, _, _ = bob.call("GET", "/_electric/entities/bobs/b2", "")
	require.Equal(t, http.StatusNotFound, status, "nothing was spawned")
	// bob may unregister only his own entity's wakes
	status, _, _ = bob.call("POST", "/_electric/wake/unregister", `{"subscriberUrl":"/vault/v1","sourceUrl":"/vault/v1"}`)
	require.Equal(t, http.StatusUnauthorized, status)
}

// Manifest entries written by a handler register wakes (and their deletion removes
// them); a manifest cannot observe what the entity's creator may not read.
func TestManifestWakes(t *testing.T) {
	t.Parallel()
	srv := start(t)
	alice := client{t: t, base: srv.URL, as: "user:alice"}
	bob := client{t: t, base: srv.URL, as: "user:bob"}
	alice.registerType("agent")
	tok := alice.spawn("/agent/main", "")
	srcTok := alice.spawn("/agent/src", "")
	bob.registerType("bobs")
	bobTok := bob.spawn("/bobs/secret", "")

	manifest := func(key, body string) string {
		return `{"type":"manifest","key":"` + key + `","value":` + body + `,"headers":{"operation":"upsert"}}`
	}
	alice.write("/agent/main", tok,
		manifest("observe:src", `{"kind":"observe","entity_url":"/agent/src","wake":{"on":"change","collections":["note"]}}`),
		manifest("observe:bob", `{"kind":"observe","entity_url":"/bobs/secret","wake":{"on":"change"}}`),
		manifest("source:src", `{"kind":"source","sourceType":"entity","sourceRef":"/agent/src","config":{"entityUrl":"/agent/src"},"wake":"runFinished"}`))
	alice.write("/agent/src", srcTok, `{"type":"note","key":"n","value":{},"headers":{"operation":"insert"}}`)
	w := alice.waitWakes("/agent/main", 1)
	require.Equal(t, "/agent/src", value(t, w[0]).Source)
	alice.finishRun("/agent/src", srcTok, "r1")
	w = alice.waitWakes("/agent/main", 2)
	var first map[string]any
	require.NoError(t, json.Unmarshal(value(t, w[1]).Changes[0], &first))
	require.Equal(t, "runs", first["collection"])
	require.Nil(t, value(t, w[1]).FinishedChild, "src is not main's child")

	// bob's entity changes: alice's manifest did not register on it
	bob.write("/bobs/secret", bobTok, `{"type":"note","key":"s","value":{"value":"private"},"headers":{"operation":"insert"}}`)
	// the manifest entry deleted: no more wakes from src notes
	alice.write("/agent/main", tok, `{"type":"manifest","key":"observe:src","headers":{"operation":"delete"}}`)
	alice.write("/agent/src", srcTok, `{"type":"note","key":"n2","value":{},"headers":{"operation":"insert"}}`)
	alice.finishRun("/agent/src", srcTok, "r2") // the runFinished entry stays: its wake is the signal
	w = alice.waitWakes("/agent/main", 3)
	require.Len(t, w, 3)
	for _, e := range w {
		require.NotEqual(t, "/bobs/secret", value(t, e).Source)
	}
	var ch map[string]any
	require.NoError(t, json.Unmarshal(value(t, w[2]).Changes[0], &ch))
	require.Equal(t, "runs", ch["collection"], "the deleted entry woke nothing")
}
