package external_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWebhookWakeClaimWriteDone is one remote handler's life as Electric's runtime lives
// it: a signed webhook wake with the entity context, a claim with the claim token for a
// write token, a direct State Protocol write with it, done with acks; then the next
// send wakes the handler again with a higher epoch, and the old write token is fenced.
func TestWebhookWakeClaimWriteDone(t *testing.T) {
	e := start(t)
	r := e.do("PUT", "/_electric/entities/chat/a", `{}`, "Electric-Principal", "user:ada")
	require.Equal(t, http.StatusCreated, r.status, r.text())

	w := e.next() // the spawn's entity_created is pending work
	e.verify(w)
	b := w.body
	wakeID := str(b["wake_id"])
	require.NotEmpty(t, wakeID)
	require.Equal(t, wakeID, str(b["consumerId"]))
	require.Equal(t, wakeID, str(b["consumer_id"]))
	require.Equal(t, wakeID, str(b["wakeId"]))
	require.Equal(t, "1", str(b["epoch"]))
	require.Equal(t, str(b["generation"]), str(b["epoch"]))
	require.Equal(t, "/chat/a/main", str(b["streamPath"]))
	require.Equal(t, e.srv.URL+"/_electric/wake-callbacks/"+wakeID, str(b["callback"]))
	require.Equal(t, str(b["callback_token"]), str(b["claimToken"]))
	require.Equal(t, str(b["callback_token"]), str(b["token"]))
	require.Equal(t, "inbox", str(b["triggerEvent"]))
	ent := b["entity"].(map[string]any)
	require.Equal(t, "/chat/a", ent["url"])
	require.Equal(t, "chat", ent["type"])
	require.Equal(t, map[string]any{"main": "/chat/a/main"}, ent["streams"])
	require.Equal(t, "/principal/user%3Aada", ent["createdBy"])
	require.Equal(t, map[string]any{"url": "/principal/user%3Aada", "key": "user:ada", "kind": "user", "id": "ada"}, b["principal"])
	// The pattern also matches the entity's slash-command collection, which the wake may
	// list too (depending on when the subscription saw it); the main stream is pending.
	var s0 map[string]any
	for _, s := range b["streams"].([]any) {
		if s.(map[string]any)["path"] == "/chat/a/main" { // as Electric writes it
			s0 = s.(map[string]any)
		}
	}
	require.NotNil(t, s0, "the main stream is listed: %v", b["streams"])
	// Electric's runtime takes the events stamped at or after "offset" as the wake's
	// input: it is the offset of the first unacknowledged message (here entity_created).
	first := e.eventsFrom("-1")
	require.Equal(t, "entity_created", first[0].Type)
	require.Equal(t, first[0].Headers["offset"], str(s0["offset"]))
	tail := str(s0["tail_offset"])

	callback := "/_electric/wake-callbacks/" + wakeID
	token := str(b["token"])
	claimBody := `{"epoch":1,"wakeId":"` + wakeID + `"}`
	r = e.do("POST", callback, claimBody, "Authorization", "Bearer "+token+"x")
	require.Equal(t, http.StatusUnauthorized, r.status, "a claim needs the wake's token: %s", r.text())
	r = e.do("POST", callback, claimBody)
	require.Equal(t, http.StatusUnauthorized, r.status, r.text())
	r = e.do("POST", callback, `{"epoch":2,"wakeId":"`+wakeID+`"}`, "Authorization", "Bearer "+token)
	require.Equal(t, http.StatusConflict, r.status, "a wrong epoch is fenced: %s", r.text())
	r = e.do("POST", callback, claimBody, "Authorization", "Bearer "+token)
	require.Equal(t, http.StatusOK, r.status, r.text())
	claim := r.json(t)
	require.Equal(t, true, claim["ok"])
	writeToken := claim["writeToken"].(string)
	require.NotEmpty(t, writeToken)

	event := `{"type":"text","key":"t1","value":{"text":"hello from outside"},"headers":{"operation":"insert"}}`
	require.Equal(t, http.StatusUnauthorized, e.do("POST", "/chat/a/main", event).status)
	r = e.do("POST", "/chat/a/main", event, "Authorization", "Bearer "+writeToken)
	require.Equal(t, http.StatusNoContent, r.status, r.text())
	r = e.do("POST", "/chat/a/main", `{"type":"text","key":"t2","value":{"text":"again"},"headers":{"operation":"insert"}}`,
		"Electric-Claim-Token", writeToken)
	require.Equal(t, http.StatusNoContent, r.status, r.text())

	// heartbeat, then done with the ack of what the wake listed
	r = e.do("POST", callback, `{"epoch":1}`, "Authorization", "Bearer "+token)
	require.Equal(t, http.StatusOK, r.status, r.text())
	r = e.do("POST", callback, `{"epoch":1,"acks":[{"path":"/chat/a/main","offset":"`+tail+`"}],"done":true}`,
		"Authorization", "Bearer "+token)
	require.Equal(t, http.StatusOK, r.status, r.text())
	// The handler's own writes came after the acked offset: they are pending work, and
	// wake the handler again (as any append to a subscribed stream does).
	w2 := e.next()
	require.Equal(t, "2", str(w2.body["epoch"]))
	// Two messages are pending (t1, t2): the wake starts at the first, so the runtime
	// sees both as its input, not only the one at the tail.
	pending := e.eventsFrom(tail)
	require.Len(t, pending, 2)
	require.Equal(t, "t1", pending[0].Key)
	s2 := w2.body["streams"].([]any)[0].(map[string]any)
	require.Equal(t, pending[0].Headers["offset"], str(s2["offset"]))
	require.Equal(t, pending[1].Headers["offset"], str(s2["tail_offset"]))
	require.NotEqual(t, wakeID, str(w2.body["wake_id"]))
	r = e.do("POST", "/chat/a/main", `{"type":"text","key":"t3","value":{},"headers":{"operation":"insert"}}`,
		"Authorization", "Bearer "+writeToken)
	require.Equal(t, http.StatusUnauthorized, r.status, "the first wake's write token is fenced by the second: %s", r.text())
	r = e.do("POST", callback, claimBody, "Authorization", "Bearer "+token)
	require.Equal(t, http.StatusConflict, r.status, "the first wake can no longer be claimed: %s", r.text())
	r = e.do("POST", callback, `{"epoch":1,"done":true}`, "Authorization", "Bearer "+token)
	require.Equal(t, http.StatusOK, r.status, "a late done is harmless: %s", r.text())
	require.Equal(t, true, r.json(t)["ended"])

	// finish the second wake, then a send wakes the handler with the inbox message
	cb2, tok2 := "/_electric/wake-callbacks/"+str(w2.body["wake_id"]), str(w2.body["token"])
	tail2 := str(s2["tail_offset"])
	r = e.do("POST", cb2, `{"epoch":2,"acks":[{"path":"/chat/a/main","offset":"`+tail2+`"}],"done":true}`,
		"Authorization", "Bearer "+tok2)
	require.Equal(t, http.StatusOK, r.status, r.text())
	r = e.do("POST", "/_electric/entities/chat/a/send", `{"payload":"ping","key":"m1"}`)
	require.Equal(t, http.StatusOK, r.status, r.text())
	w3 := e.next()
	require.Equal(t, "3", str(w3.body["epoch"]))
	read := e.do("GET", "/chat/a/main?offset="+tail2, "")
	var evs []map[string]any
	require.NoError(t, json.Unmarshal(read.body, &evs))
	require.Len(t, evs, 1)
	require.Equal(t, "inbox", evs[0]["type"])
	require.Equal(t, "m1", evs[0]["key"])
}

// TestWakesOfPlainStreamsStayDurableStreams: a subscription over plain streams gets the
// protocol's wake, with nothing of Electric's added.
func TestWakesOfPlainStreamsStayDurableStreams(t *testing.T) {
	e := start(t)
	r := e.do("PUT", "/__ds/subscriptions/plain", `{"type":"webhook","pattern":"jobs/*","webhook":{"url":"`+
		e.hookURL(t)+`"}}`)
	require.Equal(t, http.StatusCreated, r.status, r.text())
	require.Equal(t, http.StatusCreated, e.do("PUT", "/jobs/one", `[{"n":1}]`).status)
	w := e.next()
	require.Equal(t, "plain", str(w.body["subscription_id"]))
	for _, k := range []string{"consumerId", "epoch", "entity", "callback", "claimToken", "streamPath"} {
		require.NotContains(t, w.body, k)
	}
	require.NotContains(t, w.body["streams"].([]any)[0].(map[string]any), "offset")
}

// TestWriteTokenCoversTheWakesStreams: a wake that lists several entities' streams (one
// subscription over a pattern) gives a write token for each of them, and for no other.
func TestWriteTokenCoversTheWakesStreams(t *testing.T) {
	e := startBare(t)
	e.registerType(`{"name":"pair","description":"d"}`)
	e.registerType(`{"name":"other","description":"d"}`)
	require.Equal(t, http.StatusCreated, e.do("PUT", "/_electric/entities/other/x", `{}`).status)
	// the receiver is slow to be woken: both entities exist before the subscription
	require.Equal(t, http.StatusCreated, e.do("PUT", "/_electric/entities/pair/a", `{}`).status)
	require.Equal(t, http.StatusCreated, e.do("PUT", "/_electric/entities/pair/b", `{}`).status)
	r := e.do("PUT", "/__ds/subscriptions/pairs", `{"type":"webhook","pattern":"pair/**","webhook":{"url":"`+e.hookURL(t)+`"}}`)
	require.Equal(t, http.StatusCreated, r.status, r.text())
	require.Equal(t, http.StatusOK, e.do("POST", "/_electric/entities/pair/a/send", `{"payload":1}`).status)
	require.Equal(t, http.StatusOK, e.do("POST", "/_electric/entities/pair/b/send", `{"payload":2}`).status)
	w := e.next()
	listed := 0
	for _, s := range w.body["streams"].([]any) {
		if s.(map[string]any)["path"] == "/pair/b/main" || s.(map[string]any)["path"] == "/pair/a/main" {
			listed++
		}
	}
	wakeID, token := str(w.body["wake_id"]), str(w.body["token"])
	r = e.do("POST", "/_electric/wake-callbacks/"+wakeID, `{"epoch":`+str(w.body["epoch"])+`,"wakeId":"`+wakeID+`"}`,
		"Authorization", "Bearer "+token)
	require.Equal(t, http.StatusOK, r.status, r.text())
	wt := r.json(t)["writeToken"].(string)
	ev := `{"type":"text","key":"k","value":{},"headers":{"operation":"insert"}}`
	for _, s := range w.body["streams"].([]any) {
		path := s.(map[string]any)["path"].(string)
		if !strings.HasSuffix(path, "/main") {
			continue // the pattern also follows the slash-command collections
		}
		r = e.do("POST", path, ev, "Authorization", "Bearer "+wt)
		require.Equal(t, http.StatusNoContent, r.status, "%s: %s", path, r.text())
	}
	require.GreaterOrEqual(t, listed, 1)
	r = e.do("POST", "/other/x/main", ev, "Authorization", "Bearer "+wt)
	require.Equal(t, http.StatusUnauthorized, r.status, "a stream the wake does not list: %s", r.text())
}
