package external_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func (e *env) status(url string) string {
	e.t.Helper()
	r := e.do("GET", "/_electric/entities"+url, "")
	require.Equal(e.t, http.StatusOK, r.status, r.text())
	return r.json(e.t)["status"].(string)
}

// claim claims webhook wake w and returns its callback path, claim token and write token.
func (e *env) claim(w hook) (callback, token, writeToken string) {
	e.t.Helper()
	wakeID, token := str(w.body["wakeId"]), str(w.body["claimToken"])
	callback = "/_electric/wake-callbacks/" + wakeID
	r := e.do("POST", callback, `{"epoch":`+str(w.body["epoch"])+`,"wakeId":"`+wakeID+`"}`, "Authorization", "Bearer "+token)
	require.Equal(e.t, http.StatusOK, r.status, r.text())
	return callback, token, r.json(e.t)["writeToken"].(string)
}

// done ends wake w, acknowledging its stream up to the offset the wake gave.
func (e *env) done(w hook, callback, token string) {
	e.t.Helper()
	s := w.body["streams"].([]any)[0].(map[string]any)
	// a consumer that handled everything acknowledges the tail ("offset" is where the
	// wake's input starts)
	r := e.do("POST", callback, `{"epoch":`+str(w.body["epoch"])+`,"acks":[{"path":"`+str(s["path"])+`","offset":"`+
		str(s["tail_offset"])+`"}],"done":true}`, "Authorization", "Bearer "+token)
	require.Equal(e.t, http.StatusOK, r.status, r.text())
}

// TestElectricRuntimeBasics walks what every handler of Electric's runtime does: the wake
// names its stream as the runtime looks it up ("/type/id/main", with the offset it
// starts from), the entity is running until the wake is done, and ctx.send's
// from_agent is backed by the claim's write token while (and only while) the wake is
// current — for immediate and delayed sends alike.
func TestElectricRuntimeBasics(t *testing.T) {
	e := startBare(t)
	e.registerType(`{"name":"agent","description":"d","serve_endpoint":"` + e.hookURL(t) + `"}`)
	e.registerType(`{"name":"peer","description":"d"}`)
	require.Equal(t, http.StatusCreated, e.do("PUT", "/_electric/entities/peer/p", `{}`).status)
	require.Equal(t, http.StatusCreated, e.do("PUT", "/_electric/entities/agent/a", `{}`).status)

	w := e.next()
	require.Equal(t, "/agent/a/main", str(w.body["streamPath"]))
	streams := w.body["streams"].([]any)
	require.Len(t, streams, 1)
	s0 := streams[0].(map[string]any)
	require.Equal(t, "/agent/a/main", s0["path"], "the runtime finds its offset by streamPath")
	require.Equal(t, s0["tail_offset"], s0["offset"])
	require.Regexp(t, `^\d{16}_\d{16}$`, str(s0["offset"]))
	require.Equal(t, "running", e.status("/agent/a"), "a delivered wake shows as running")
	require.Equal(t, "idle", e.status("/peer/p"))

	callback, token, writeToken := e.claim(w)
	send := func(body string, headers ...string) resp {
		return e.do("POST", "/_electric/entities/peer/p/send", body, headers...)
	}
	r := send(`{"payload":"hi","from_agent":"/agent/a"}`, "Authorization", "Bearer "+writeToken)
	require.Equal(t, http.StatusOK, r.status, "the claim's write token backs from_agent: %s", r.text())
	r = send(`{"payload":"hi","from_agent":"http://localhost/agent/a"}`, "Electric-Claim-Token", writeToken)
	require.Equal(t, http.StatusOK, r.status, "a full URL names the agent by its path: %s", r.text())
	r = send(`{"payload":"later","from_agent":"/agent/a","afterMs":60000}`, "Authorization", "Bearer "+writeToken)
	require.Equal(t, http.StatusNoContent, r.status, r.text())
	r = send(`{"payload":"hi","from_agent":"/peer/p"}`, "Authorization", "Bearer "+writeToken)
	require.Equal(t, http.StatusBadRequest, r.status, "the token is the agent's, not another entity's: %s", r.text())
	r = send(`{"payload":"hi","from_agent":"/agent/a"}`, "Authorization", "Bearer "+writeToken+"x")
	require.Equal(t, http.StatusBadRequest, r.status, r.text())

	e.done(w, callback, token)
	require.Equal(t, "idle", e.status("/agent/a"), "done makes the entity idle")
	r = send(`{"payload":"hi","from_agent":"/agent/a"}`, "Authorization", "Bearer "+writeToken)
	require.Equal(t, http.StatusBadRequest, r.status, "a token of an ended wake is fenced: %s", r.text())
	r = send(`{"payload":"later","from_agent":"/agent/a","afterMs":60000}`, "Authorization", "Bearer "+writeToken)
	require.Equal(t, http.StatusBadRequest, r.status, r.text())

	// the peer's stream holds the two sends made with the token, marked from the agent
	// as the sender named it
	read := e.do("GET", "/peer/p/main?offset=-1", "")
	require.Equal(t, 1, countFromAgent(t, read.body, "/agent/a"))
	require.Equal(t, 1, countFromAgent(t, read.body, "http://localhost/agent/a"))
}

func countFromAgent(t *testing.T, body []byte, agent string) int {
	t.Helper()
	n := 0
	for _, ev := range decodeEvents(t, body) {
		if v, ok := ev["value"].(map[string]any); ok && ev["type"] == "inbox" && v["from_agent"] == agent {
			n++
		}
	}
	return n
}

// TestSignalsWhileRunning: a running entity can be paused (its done then leaves it
// paused) and stopped (SIGTERM makes it stopping; its done stops it and closes its
// stream).
func TestSignalsWhileRunning(t *testing.T) {
	e := startBare(t)
	e.registerType(`{"name":"agent","description":"d","serve_endpoint":"` + e.hookURL(t) + `"}`)

	require.Equal(t, http.StatusCreated, e.do("PUT", "/_electric/entities/agent/s", `{}`).status)
	w := e.next()
	require.Equal(t, "running", e.status("/agent/s"))
	callback, token, _ := e.claim(w)
	r := e.do("POST", "/_electric/entities/agent/s/signal", `{"signal":"SIGTERM"}`)
	require.Equal(t, http.StatusOK, r.status, r.text())
	require.Equal(t, "stopping", e.status("/agent/s"))
	e.done(w, callback, token)
	require.Equal(t, "stopped", e.status("/agent/s"), "the done of the running wake finishes the stop")
	r = e.do("POST", "/_electric/entities/agent/s/send", `{"payload":"x"}`)
	require.Equal(t, http.StatusConflict, r.status, r.text())
	head := e.do("HEAD", "/agent/s/main", "")
	require.Equal(t, "true", head.headers.Get("Stream-Closed"), "the stopped entity's stream is closed")

	// the stop's own events are pending work; the handler is not woken for an ended
	// entity, so the next wake is the next entity's
	require.Equal(t, http.StatusCreated, e.do("PUT", "/_electric/entities/agent/p", `{}`).status)
	w = e.next()
	require.Equal(t, "/agent/p/main", str(w.body["streamPath"]))
	require.Equal(t, "running", e.status("/agent/p"))
	callback, token, _ = e.claim(w)
	r = e.do("POST", "/_electric/entities/agent/p/signal", `{"signal":"SIGSTOP"}`)
	require.Equal(t, http.StatusOK, r.status, r.text())
	e.done(w, callback, token)
	require.Equal(t, "paused", e.status("/agent/p"), "a done does not undo a pause")
	r = e.do("POST", "/_electric/entities/agent/p/signal", `{"signal":"SIGCONT"}`)
	require.Equal(t, http.StatusOK, r.status, r.text())
	// resumed: idle, or already running again — SIGCONT (and the SIGSTOP held while it
	// was paused) are signal wakes, which the dispatcher may have delivered by now
	require.Contains(t, []string{"idle", "running"}, e.status("/agent/p"))
}

// TestDispatchLinkedOnSend: an entity spawned before its type had a serve_endpoint is
// linked when it is next sent a message, and its handler is woken for it.
func TestDispatchLinkedOnSend(t *testing.T) {
	e := startBare(t)
	e.registerType(`{"name":"late","description":"d"}`)
	require.Equal(t, http.StatusCreated, e.do("PUT", "/_electric/entities/late/x", `{}`).status)
	e.registerType(`{"name":"late","description":"d","serve_endpoint":"` + e.hookURL(t) + `"}`)
	sub := "/__ds/subscriptions/webhook:" + hash16(e.hookURL(t))
	require.Equal(t, http.StatusNotFound, e.do("GET", sub, "").status, "nothing links the entity before a send")

	r := e.do("POST", "/_electric/entities/late/x/send", `{"payload":"wake up"}`)
	require.Equal(t, http.StatusOK, r.status, r.text())
	w := e.next()
	require.Equal(t, "/late/x/main", str(w.body["streamPath"]))
	r = e.do("GET", sub, "")
	require.Equal(t, http.StatusOK, r.status, r.text())
	require.Len(t, r.json(t)["streams"].([]any), 1)

	// further sends find the link made (the wake in flight lists the new message later)
	callback, token, _ := e.claim(w)
	r = e.do("POST", "/_electric/entities/late/x/send", `{"payload":"again"}`)
	require.Equal(t, http.StatusOK, r.status, r.text())
	e.done(w, callback, token)
	w2 := e.next()
	require.Equal(t, "/late/x/main", str(w2.body["streamPath"]))
}

func decodeEvents(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	require.NoError(t, json.Unmarshal(body, &out), string(body))
	return out
}
