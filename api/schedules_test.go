package api_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/internal/clock"
	"github.com/entityd/entityd/internal/quota"
	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/internal/testwait"
)

func fireAtIn(d time.Duration) string { return time.Now().Add(d).UTC().Format(time.RFC3339Nano) }

// fireAtOn is fireAtIn on a test clock.
func fireAtOn(clk *clock.Test, d time.Duration) string {
	return clk.Now().Add(d).UTC().Format(time.RFC3339Nano)
}

// manifests are the entity's manifest events for one key.
func manifests(h *harness, url, key string) []event {
	var out []event
	for _, e := range ofType(h.events(url), "manifest") {
		if e.Key == key {
			out = append(out, e)
		}
	}
	return out
}

// TestFutureSendSchedule: a future_send is a manifest entry (status pending) answered
// with its txid, then an inbox message when due, and the entry's status sent; replacing
// it replaces the pending send; deleting it cancels it and deletes the entry. The server
// keeps time with a test clock, which the test moves past each fireAt.
func TestFutureSendSchedule(t *testing.T) {
	h, clk := setupOnClock(t, testserverQuiet())
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "a", `{}`)
	const base = entitiesPath + "/chat/a/schedules/"

	r := h.do(http.MethodPut, base+"remind", map[string]any{"scheduleType": "future_send", "payload": map[string]any{"text": "at nine"},
		"fireAt": fireAtOn(clk, 300*time.Millisecond)})
	requireStatus(t, r, http.StatusOK)
	txid := str(t, r.object(t)["txid"])
	require.Regexp(t, uuidRe, txid)
	ms := manifests(h, "/chat/a", "schedule:remind")
	require.Len(t, ms, 1)
	require.Equal(t, "upsert", ms[0].Headers["operation"])
	require.Equal(t, txid, ms[0].Headers["txid"])
	require.Equal(t, "pending", str(t, ms[0].Value["status"]))
	require.Equal(t, "future_send", str(t, ms[0].Value["scheduleType"]))
	require.Equal(t, "/chat/a", str(t, ms[0].Value["targetUrl"]))
	require.JSONEq(t, `{"text":"at nine"}`, string(ms[0].Value["payload"]))
	producer := str(t, ms[0].Value["producerId"])

	require.Empty(t, ofType(h.events("/chat/a"), "inbox"), "not before it is due")
	clk.Advance(300 * time.Millisecond)
	var inbox []event
	testwait.Until(t, "the send fires and its entry says sent", func() bool {
		inbox = ofType(h.events("/chat/a"), "inbox")
		return len(inbox) == 1 && len(manifests(h, "/chat/a", "schedule:remind")) == 2
	})
	require.Equal(t, "scheduled-"+producer, inbox[0].Key)
	require.JSONEq(t, `{"text":"at nine"}`, string(inbox[0].Value["payload"]))
	sent := manifests(h, "/chat/a", "schedule:remind")[1]
	require.Equal(t, "update", sent.Headers["operation"])
	require.Equal(t, "sent", str(t, sent.Value["status"]))
	requireISOTime(t, sent.Value["sentAt"])

	// replaced before it fires: only the replacement is sent; deleted: nothing is
	requireStatus(t, h.do(http.MethodPut, base+"twice", map[string]any{"scheduleType": "future_send", "payload": "first",
		"fireAt": fireAtOn(clk, 200*time.Millisecond)}), http.StatusOK)
	requireStatus(t, h.do(http.MethodPut, base+"twice", map[string]any{"scheduleType": "future_send", "payload": "second",
		"fireAt": fireAtOn(clk, 300*time.Millisecond)}), http.StatusOK)
	requireStatus(t, h.do(http.MethodPut, base+"gone", map[string]any{"scheduleType": "future_send", "payload": "never",
		"fireAt": fireAtOn(clk, 250*time.Millisecond)}), http.StatusOK)
	r = h.do(http.MethodDelete, base+"gone", nil)
	requireStatus(t, r, http.StatusOK)
	require.Regexp(t, uuidRe, str(t, r.object(t)["txid"]))
	ms = manifests(h, "/chat/a", "schedule:gone")
	require.Equal(t, "delete", ms[len(ms)-1].Headers["operation"])
	requireStatus(t, h.do(http.MethodPut, base+"last", map[string]any{"scheduleType": "future_send", "payload": "last",
		"fireAt": fireAtOn(clk, 500*time.Millisecond)}), http.StatusOK)
	clk.Advance(500 * time.Millisecond)
	testwait.Until(t, "the sends due fire", func() bool { return len(ofType(h.events("/chat/a"), "inbox")) >= 3 })
	var payloads []string
	for _, e := range ofType(h.events("/chat/a"), "inbox") {
		payloads = append(payloads, string(e.Value["payload"]))
	}
	// due rows fire in fire_at order: "last" firing means "first" and "never" were due before it
	require.Equal(t, []string{`{"text":"at nine"}`, `"second"`, `"last"`}, payloads)

	// to another entity: needs write on it; a message type is checked like a send's
	h.mustSpawn("chat", "b", `{}`)
	requireStatus(t, h.do(http.MethodPut, base+"other", map[string]any{"scheduleType": "future_send", "payload": "hi b",
		"fireAt": fireAtOn(clk, 100*time.Millisecond), "targetUrl": "/chat/b"}), http.StatusOK)
	clk.Advance(100 * time.Millisecond)
	testwait.Until(t, "the send to another entity fires", func() bool { return len(ofType(h.events("/chat/b"), "inbox")) == 1 })
	requireError(t, h.do(http.MethodPut, base+"x", map[string]any{"scheduleType": "future_send", "payload": "p",
		"fireAt": fireAtOn(clk, time.Second), "targetUrl": "/chat/none"}), http.StatusNotFound, "NOT_FOUND", "Entity not found at /chat/none")
}

// TestScheduleErrors: bad bodies are 400 with details and write nothing.
func TestScheduleErrors(t *testing.T) {
	h := setup(t, testserverQuiet())
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "a", `{}`)
	const path = entitiesPath + "/chat/a/schedules/s"
	before := len(h.events("/chat/a"))
	for _, c := range []struct {
		body    string
		pointer string
	}{
		{`{"payload":1}`, "/scheduleType"},
		{`{"scheduleType":"weekly","payload":1}`, "/scheduleType"},
		{`{"scheduleType":"cron","expression":"* * * * *"}`, "/payload"},
		{`{"scheduleType":"cron","payload":1}`, "/expression"},
		{`{"scheduleType":"cron","expression":"* * * * *","payload":1,"debounceMs":-1}`, "/debounceMs"},
		{`{"scheduleType":"cron","expression":"* * * * *","payload":1,"extra":1}`, "/extra"},
		{`{"scheduleType":"cron","expression":"every day","payload":1}`, "/expression"},
		{`{"scheduleType":"cron","expression":"CRON_TZ=Asia/Tokyo 0 9 * * *","payload":1}`, "/expression"},
		{`{"scheduleType":"cron","expression":"0 9 * * *","timezone":"Mars/Olympus","payload":1}`, "/timezone"},
		{`{"scheduleType":"cron","expression":"0 9 * * *","timezone":"Local","payload":1}`, "/timezone"},
		{`{"scheduleType":"future_send","payload":1}`, "/fireAt"},
		{`{"scheduleType":"future_send","payload":1,"fireAt":5}`, "/fireAt"},
	} {
		r := h.do(http.MethodPut, path, c.body)
		e := requireError(t, r, http.StatusBadRequest, "INVALID_REQUEST", errorMessage(t, r))
		var pointers []string
		for _, d := range e.Details {
			pointers = append(pointers, d.Path)
		}
		require.Contains(t, pointers, c.pointer, c.body)
	}
	requireError(t, h.do(http.MethodPut, path, `{"scheduleType":"future_send","payload":1,"fireAt":"tomorrow"}`),
		http.StatusBadRequest, "INVALID_REQUEST", "Invalid fireAt timestamp: tomorrow")
	requireError(t, h.do(http.MethodPut, path, `{"scheduleType":"future_send","payload":1,"fireAt":"2999-01-01T00:00:00Z"}`),
		http.StatusBadRequest, "INVALID_REQUEST", "fireAt must be within 365 days")
	requireError(t, h.do(http.MethodPut, path, `{"scheduleType":"future_send","payload":1,"fireAt":"`+fireAtIn(time.Hour)+`","from":"/principal/other"}`),
		http.StatusBadRequest, "INVALID_REQUEST", "Request from must match Electric-Principal")
	requireStatus(t, h.do(http.MethodPut, entitiesPath+"/chat/none/schedules/s", `{"scheduleType":"cron","expression":"* * * * *","payload":1}`), http.StatusNotFound)
	requireStatus(t, h.do(http.MethodPut, entitiesPath+"/principal/x/schedules/s", `{"scheduleType":"cron","expression":"* * * * *","payload":1}`), http.StatusBadRequest)
	require.Len(t, h.events("/chat/a"), before, "refused schedules write nothing")

	// a killed entity takes no schedules
	requireStatus(t, h.do(http.MethodDelete, entitiesPath+"/chat/a", nil), http.StatusOK)
	requireStatus(t, h.do(http.MethodPut, path, `{"scheduleType":"future_send","payload":1,"fireAt":"`+fireAtIn(time.Hour)+`"}`), http.StatusConflict)
	requireStatus(t, h.do(http.MethodPut, path, `{"scheduleType":"cron","expression":"0 9 * * *","payload":1}`), http.StatusConflict)
}

func errorMessage(t *testing.T, r *response) string {
	var env struct {
		Error apiError `json:"error"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &env), string(r.Body))
	return env.Error.Message
}

// cronPath is the runtime's getCronStreamPath.
func cronPath(expr, tz string) string {
	b, _ := json.Marshal(map[string]string{"expression": expr, "timezone": tz})
	return "/_cron/" + base64.RawURLEncoding.EncodeToString(b)
}

// TestCronScheduleAndTicks: a cron schedule writes its manifest entry and ensures its
// cron stream, whose ticks (cron_tick, tick-<n>, in the schedule's time zone) arrive.
func TestCronScheduleAndTicks(t *testing.T) {
	h := setup(t, testserverQuiet())
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "a", `{}`)
	r := h.do(http.MethodPut, entitiesPath+"/chat/a/schedules/every", map[string]any{"scheduleType": "cron",
		"expression": "* * * * * *", "timezone": "Asia/Tokyo", "payload": map[string]any{"q": "tick"}, "debounceMs": 50})
	requireStatus(t, r, http.StatusOK)
	txid := str(t, r.object(t)["txid"])
	ms := manifests(h, "/chat/a", "schedule:every")
	require.Len(t, ms, 1)
	require.Equal(t, txid, ms[0].Headers["txid"])
	require.Equal(t, "cron", str(t, ms[0].Value["scheduleType"]))
	require.Equal(t, "Asia/Tokyo", str(t, ms[0].Value["timezone"]))
	require.JSONEq(t, `{"on":"change","debounceMs":50}`, string(ms[0].Value["wake"]))

	path := cronPath("* * * * * *", "Asia/Tokyo")
	var ticks []event
	testwait.Until(t, "the schedule's stream", func() bool {
		r := h.do(http.MethodGet, path+"?offset=-1", nil)
		if r.Status != http.StatusOK {
			return false
		}
		ticks = parseEvents(t, r.Body)
		return len(ticks) >= 2
	}, 5*time.Second)
	for i, tk := range ticks {
		require.Equal(t, "cron_tick", tk.Type)
		require.Equal(t, "tick-"+strconv.Itoa(i), tk.Key)
		require.Equal(t, "Asia/Tokyo", str(t, tk.Value["timezone"]))
		require.Equal(t, "* * * * * *", str(t, tk.Value["expression"]))
		require.Equal(t, int64(i), integer(t, tk.Value["tickNumber"]))
		requireISOTime(t, tk.Value["firedAt"])
	}
	// the server writes cron streams; nobody appends to them
	requireStatus(t, h.do(http.MethodPost, path, `{"type":"cron_tick","key":"tick-99"}`), http.StatusForbidden)

	requireStatus(t, h.do(http.MethodDelete, entitiesPath+"/chat/a/schedules/every", nil), http.StatusOK)
	ms = manifests(h, "/chat/a", "schedule:every")
	require.Equal(t, "delete", ms[len(ms)-1].Headers["operation"])
}

// TestCronEnsureStream: POST /_electric/observations/cron/ensure-stream answers the
// runtime's path for the spec (UTC when no zone is given), the same on every call.
func TestCronEnsureStream(t *testing.T) {
	h := setup(t, testserverQuiet())
	const url = "/_electric/observations/cron/ensure-stream"
	for _, c := range []struct{ body, expr, tz string }{
		{`{"expression":"0 9 * * *","timezone":"Europe/Paris"}`, "0 9 * * *", "Europe/Paris"},
		{`{"expression":"*/5 * * * *"}`, "*/5 * * * *", "UTC"},
		{`{"expression":"0 9 * * 1-5","timezone":"America/New_York"}`, "0 9 * * 1-5", "America/New_York"},
	} {
		first := h.do(http.MethodPost, url, c.body)
		requireStatus(t, first, http.StatusOK)
		require.JSONEq(t, `{"streamUrl":"`+cronPath(c.expr, c.tz)+`"}`, string(first.Body))
		second := h.do(http.MethodPost, url, c.body, "Electric-Principal", "user:someone")
		requireStatus(t, second, http.StatusOK)
		require.JSONEq(t, string(first.Body), string(second.Body))
		requireStatus(t, h.do(http.MethodHead, cronPath(c.expr, c.tz), nil, "Electric-Principal", "user:someone"), http.StatusOK)
	}
	requireStatus(t, h.do(http.MethodPost, url, `{"expression":"nope"}`), http.StatusBadRequest)
	requireStatus(t, h.do(http.MethodPost, url, `{"expression":"0 9 * * *","timezone":"Nowhere/Land"}`), http.StatusBadRequest)
	requireStatus(t, h.do(http.MethodPost, url, `{}`), http.StatusBadRequest)
	requireStatus(t, h.do(http.MethodPost, url, `{"expression":5}`), http.StatusBadRequest)
}

// TestFutureSendOnceAcrossReplicasAndRestart: future_sends stored through one server,
// which then stops, fire once each when two servers share the database.
func TestFutureSendOnceAcrossReplicasAndRestart(t *testing.T) {
	t.Parallel()
	first := testserver.Start(t, testserverQuiet())
	const n = 40
	t.Run("schedule and stop", func(t *testing.T) {
		h := &harness{t: t, srv: testserver.Start(t, testserver.Options{QuietLogs: true, DBURL: first.DBURL})}
		h.registerType(`{"name":"chat","description":"d"}`)
		h.mustSpawn("chat", "a", `{}`)
		for i := range n {
			requireStatus(t, h.do(http.MethodPut, entitiesPath+"/chat/a/schedules/s"+strconv.Itoa(i), map[string]any{
				"scheduleType": "future_send", "payload": i, "fireAt": fireAtIn(time.Duration(800+10*i) * time.Millisecond)}), http.StatusOK)
		}
	}) // the server that stored them is stopped here
	second := testserver.Start(t, testserver.Options{QuietLogs: true, DBURL: first.DBURL})
	h := &harness{t: t, srv: second}
	_ = first
	testwait.Until(t, "the fired messages in /chat/a's inbox", func() bool { return len(ofType(h.events("/chat/a"), "inbox")) >= n }, 10*time.Second)
	seen := map[string]int{}
	for _, e := range ofType(h.events("/chat/a"), "inbox") {
		seen[string(e.Value["payload"])]++
	}
	require.Len(t, seen, n)
	for p, c := range seen {
		require.Equal(t, 1, c, "payload %s fired %d times", p, c)
	}
	sent := 0
	for _, e := range ofType(h.events("/chat/a"), "manifest") {
		if e.Headers["operation"] == "update" && str(t, e.Value["status"]) == "sent" {
			sent++
		}
	}
	require.Equal(t, n, sent)
}

// TestScheduleAndObservationQuotas: a principal's schedules and tag observations are
// bounded (429 QUOTA_EXCEEDED); replacing a schedule or ensuring an observation again
// is no new one; deleting a schedule frees its place.
func TestScheduleAndObservationQuotas(t *testing.T) {
	t.Parallel()
	key := testserver.NewJWTKey(t)
	s := testserver.Start(t, testserver.Options{QuietLogs: true, API: api.Config{Auth: key.Auth,
		Quotas: quota.Limits{Schedules: 2, Observations: 1}}})
	call := func(method, path, body string) int {
		req, _ := http.NewRequest(method, s.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key.Token(t, "user:bob"))
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	require.Equal(t, http.StatusCreated, call("POST", typesPath, `{"name":"t","description":"d"}`))
	require.Equal(t, http.StatusCreated, call("PUT", entitiesPath+"/t/a", `{}`))
	cron := `{"scheduleType":"cron","expression":"0 9 * * *","payload":1}`
	later := `{"scheduleType":"future_send","payload":1,"fireAt":"` + fireAtIn(time.Hour) + `"}`
	require.Equal(t, http.StatusOK, call("PUT", entitiesPath+"/t/a/schedules/c", cron))
	require.Equal(t, http.StatusOK, call("PUT", entitiesPath+"/t/a/schedules/f", later))
	require.Equal(t, http.StatusTooManyRequests, call("PUT", entitiesPath+"/t/a/schedules/g", later))
	require.Equal(t, http.StatusOK, call("PUT", entitiesPath+"/t/a/schedules/f", later), "a replacement is no new schedule")
	require.Equal(t, http.StatusOK, call("PUT", entitiesPath+"/t/a/schedules/c", later), "nor is a change of kind")
	require.Equal(t, http.StatusOK, call("DELETE", entitiesPath+"/t/a/schedules/f", ""))
	require.Equal(t, http.StatusOK, call("PUT", entitiesPath+"/t/a/schedules/g", cron))

	const ensure = "/_electric/observations/entities/ensure-stream"
	require.Equal(t, http.StatusOK, call("POST", ensure, `{"tags":{"a":"1"}}`))
	require.Equal(t, http.StatusOK, call("POST", ensure, `{"tags":{"a":"1"}}`))
	require.Equal(t, http.StatusTooManyRequests, call("POST", ensure, `{"tags":{"a":"2"}}`))
}
