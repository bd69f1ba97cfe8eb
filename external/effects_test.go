package external_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// mainEvents reads an entity's main stream whole.
func (e *env) mainEvents(url string) []map[string]any {
	e.t.Helper()
	r := e.do("GET", url+"/main?offset=-1", "")
	require.Equal(e.t, http.StatusOK, r.status, r.text())
	var evs []map[string]any
	require.NoError(e.t, json.Unmarshal(r.body, &evs))
	return evs
}

// TestEffectsCommitWithTheAck: a handler's writes sent with its acknowledgement
// ("effects") are committed in the ack's transaction, checked first: a wrong token or
// epoch, a stream the wake does not list, a server-only event type, a state event its
// schema refuses or a send to nobody writes nothing at all. Committed, the ack moves past
// the handler's own writes, so they do not wake it again; a message that arrived in
// between keeps the ack before it, and wakes it.
func TestEffectsCommitWithTheAck(t *testing.T) {
	e := startBare(t)
	e.registerType(`{"name":"chat","description":"d","state_schemas":{"mood":{"type":"object","required":["level"]}}}`)
	require.Equal(t, http.StatusCreated, e.do("PUT", "/_electric/entities/chat/a", `{}`).status)
	require.Equal(t, http.StatusCreated, e.do("PUT", "/_electric/entities/chat/b", `{}`).status)
	r := e.do("PUT", "/__ds/subscriptions/chat-a", `{"type":"webhook","streams":["/chat/a/main"],"webhook":{"url":"`+e.hookURL(t)+`"}}`)
	require.Equal(t, http.StatusCreated, r.status, r.text())
	require.Equal(t, http.StatusOK, e.do("POST", "/_electric/entities/chat/a/send", `{"payload":"hi","key":"m1"}`).status)

	w := e.next()
	wakeID, token, epoch := str(w.body["wake_id"]), str(w.body["token"]), str(w.body["epoch"])
	tail := str(w.body["streams"].([]any)[0].(map[string]any)["offset"])
	callback := "/_electric/wake-callbacks/" + wakeID
	before := len(e.mainEvents("/chat/a"))
	beforeB := len(e.mainEvents("/chat/b"))
	text := `{"type":"text","key":"r1","value":{"text":"hello"},"headers":{"operation":"insert"}}`
	ack := func(effects string) string {
		return `{"epoch":` + epoch + `,"acks":[{"path":"/chat/a/main","offset":"` + tail + `"}],"effects":` + effects + `}`
	}
	refused := []struct {
		name, body, token string
		status            int
		code              string
	}{
		{"wrong token", ack(`[{"stream":"/chat/a/main","events":[` + text + `]}]`), token + "x", 401, ""},
		{"stale epoch", `{"epoch":` + epoch + `9,"acks":[],"effects":[{"stream":"/chat/a/main","events":[` + text + `]}]}`, token, 409, ""},
		{"another entity's stream", ack(`[{"stream":"/chat/b/main","events":[` + text + `]}]`), token, 409, ""},
		{"server-only event", ack(`[{"stream":"/chat/a/main","events":[{"type":"inbox","key":"x","value":{"payload":1},"headers":{"operation":"insert"}}]}]`), token, 422, "INVALID_EFFECTS"},
		{"schema refuses state", ack(`[{"stream":"/chat/a/main","events":[{"type":"mood","key":"m","value":{},"headers":{"operation":"insert"}}]}]`), token, 422, "INVALID_EFFECTS"},
		{"undeclared state", ack(`[{"stream":"/chat/a/main","events":[{"type":"weather","key":"w","value":{},"headers":{"operation":"insert"}}]}]`), token, 422, "INVALID_EFFECTS"},
		{"send to nobody", ack(`[{"stream":"/chat/a/main","sends":[{"to":"/chat/nobody","payload":1}]}]`), token, 422, "INVALID_EFFECTS"},
		{"not an array", ack(`{"stream":"/chat/a/main"}`), token, 422, "INVALID_EFFECTS"},
		{"a plain stream", ack(`[{"stream":"/jobs/1"}]`), token, 422, "INVALID_EFFECTS"},
		{"too many entities", ack(`[` + strings.TrimSuffix(strings.Repeat(`{"stream":"/chat/a/main"},`, 1001), ",") + `]`), token, 422, "INVALID_EFFECTS"},
		{"one entity twice", ack(`[{"stream":"/chat/a/main"},{"stream":"/chat/a/main"}]`), token, 422, "INVALID_EFFECTS"},
		{"control event", ack(`[{"stream":"/chat/a/main","events":[{"type":"text","key":"k","headers":{"operation":"insert","control":"up-to-date"}}]}]`), token, 422, "INVALID_EFFECTS"},
		{"unknown slash-command operation", ack(`[{"stream":"/chat/a/main","slash_commands":[{"op":"explode"}]}]`), token, 422, "INVALID_EFFECTS"},
		{"timer without a due time", ack(`[{"stream":"/chat/a/main","timers":[{"id":"t"}]}]`), token, 422, "INVALID_EFFECTS"},
		{"with a claim", `{"epoch":` + epoch + `,"wakeId":"` + wakeID + `","effects":[]}`, token, 400, "INVALID_REQUEST"},
	}
	for _, c := range refused {
		r := e.do("POST", callback, c.body, "Authorization", "Bearer "+c.token)
		require.Equal(t, c.status, r.status, "%s: %s", c.name, r.text())
		if c.code != "" {
			require.Equal(t, c.code, r.json(t)["error"].(map[string]any)["code"], c.name)
		}
		require.Len(t, e.mainEvents("/chat/a"), before, "%s: nothing written", c.name)
		require.Len(t, e.mainEvents("/chat/b"), beforeB, "%s: nothing sent", c.name)
	}

	r = e.do("POST", callback, `{"epoch":`+epoch+`,"acks":[{"path":"/chat/a/main","offset":"`+tail+`"}],"done":true,"effects":[{"stream":"/chat/a/main","events":[`+
		text+`,{"type":"mood","key":"m","value":{"level":3},"headers":{"operation":"insert"}}],"sends":[{"to":"/chat/b","payload":"fwd","key":"f1"}]}]}`,
		"Authorization", "Bearer "+token)
	require.Equal(t, http.StatusOK, r.status, r.text())
	require.Equal(t, false, r.json(t)["next_wake"], "the handler's own writes do not wake it again")
	evs := e.mainEvents("/chat/a")
	require.Len(t, evs, before+2)
	require.Equal(t, "r1", evs[before]["key"])
	require.Equal(t, "m", evs[before+1]["key"])
	bEvs := e.mainEvents("/chat/b")
	require.Len(t, bEvs, beforeB+1)
	sent := bEvs[beforeB]["value"].(map[string]any)
	require.Equal(t, "fwd", sent["payload"])
	require.Equal(t, "/chat/a", sent["from_agent"])

	// A message that arrives while the handler works keeps the ack before it.
	require.Equal(t, http.StatusOK, e.do("POST", "/_electric/entities/chat/a/send", `{"payload":"again","key":"m2"}`).status)
	w2 := e.next()
	wake2, token2, epoch2 := str(w2.body["wake_id"]), str(w2.body["token"]), str(w2.body["epoch"])
	read2 := str(w2.body["streams"].([]any)[0].(map[string]any)["offset"])
	require.Equal(t, http.StatusOK, e.do("POST", "/_electric/entities/chat/a/send", `{"payload":"meanwhile","key":"m3"}`).status)
	r = e.do("POST", "/_electric/wake-callbacks/"+wake2, `{"epoch":`+epoch2+`,"acks":[{"path":"/chat/a/main","offset":"`+read2+
		`"}],"done":true,"effects":[{"stream":"/chat/a/main","events":[{"type":"text","key":"r2","value":{"text":"x"},"headers":{"operation":"insert"}}]}]}`,
		"Authorization", "Bearer "+token2)
	require.Equal(t, http.StatusOK, r.status, r.text())
	require.Equal(t, true, r.json(t)["next_wake"], "the message that came in between is still to handle")
	w3 := e.next()
	s3 := w3.body["streams"].([]any)[0].(map[string]any)
	require.Equal(t, read2, str(s3["acked_offset"]))
}
