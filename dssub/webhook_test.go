package dssub

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/entityd/entityd/internal/clock"
	"github.com/entityd/entityd/internal/testwait"
)

func webhookConfig(url string) map[string]any {
	return map[string]any{"type": "webhook", "pattern": "events/*", "webhook": map[string]any{"url": url}, "lease_ttl_ms": 1000}
}

func TestCreateConfirmConflictDelete(t *testing.T) {
	h := startHarness(t, "", testOptions())
	cfg := webhookConfig("http://127.0.0.1:9/hook")
	cfg["description"] = "test subscription"

	r := h.do("PUT", subPath("s1"), cfg)
	if r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	created := r.json(t)
	if strings.Contains(string(r.Body), "secret") {
		t.Fatalf("response exposes a secret: %s", r.Body)
	}
	hook := created["webhook"].(map[string]any)
	signing := hook["signing"].(map[string]any)
	if hook["url"] != "http://127.0.0.1:9/hook" || signing["alg"] != "ed25519" || !strings.HasPrefix(signing["kid"].(string), "ds_") ||
		signing["jwks_url"] != h.URL+"/v1/stream/__ds/jwks.json" {
		t.Fatalf("webhook: %v", hook)
	}
	if created["id"] != "s1" || created["type"] != "webhook" || created["lease_ttl_ms"] != float64(1000) ||
		created["description"] != "test subscription" || created["status"] != "active" {
		t.Fatalf("created: %s", r.Body)
	}

	if r := h.do("PUT", subPath("s1"), cfg); r.Status != http.StatusOK {
		t.Fatalf("identical PUT: %d %s", r.Status, r.Body)
	}
	other := webhookConfig("http://127.0.0.1:9/other")
	if r := h.do("PUT", subPath("s1"), other); r.Status != http.StatusConflict || r.errorCode(t) != codeAlreadyExists {
		t.Fatalf("different PUT: %d %s", r.Status, r.Body)
	}
	got := h.getSub("s1")
	if got["id"] != "s1" || got["webhook"].(map[string]any)["url"] != "http://127.0.0.1:9/hook" {
		t.Fatalf("get: %v", got)
	}
	if r := h.do("DELETE", subPath("s1"), nil); r.Status != http.StatusNoContent {
		t.Fatalf("delete: %d", r.Status)
	}
	if r := h.do("GET", subPath("s1"), nil); r.Status != http.StatusNotFound || r.errorCode(t) != codeNotFound {
		t.Fatalf("get after delete: %d %s", r.Status, r.Body)
	}
	if r := h.do("DELETE", subPath("s1"), nil); r.Status != http.StatusNoContent {
		t.Fatalf("repeated delete: %d", r.Status)
	}
	// the id is free again
	if r := h.do("PUT", subPath("s1"), other); r.Status != http.StatusCreated {
		t.Fatalf("re-create: %d %s", r.Status, r.Body)
	}
}

func TestCreateRejections(t *testing.T) {
	h := startHarness(t, "", testOptions())
	for _, u := range []string{"http://10.0.0.1/hook", "http://example.com/x", "https://192.168.1.1/x", "https://localhost/x", "ftp://x/y"} {
		r := h.do("PUT", subPath("bad"), webhookConfig(u))
		if r.Status != http.StatusBadRequest || r.errorCode(t) != codeURLRejected {
			t.Errorf("%s: %d %s", u, r.Status, r.Body)
		}
	}
	invalid := []any{
		map[string]any{"type": "push", "pattern": "a/*"},
		map[string]any{"type": "webhook", "webhook": map[string]any{"url": "https://example.com"}},
		map[string]any{"type": "webhook", "pattern": "a/*"},
		map[string]any{"type": "webhook", "pattern": "a/*", "webhook": map[string]any{"url": "https://example.com"}, "lease_ttl_ms": 999},
		map[string]any{"type": "webhook", "pattern": "a/*", "webhook": map[string]any{"url": "https://example.com"}, "lease_ttl_ms": 1.5},
		map[string]any{"type": "pull-wake", "pattern": "a/*"},
		map[string]any{"type": "pull-wake", "streams": []any{"a", 3}, "wake_stream": "w"},
		map[string]any{"type": "pull-wake", "streams": []any{"__ds/x"}, "wake_stream": "w"},
		map[string]any{"type": "pull-wake", "streams": []any{"w"}, "wake_stream": "/w/"},
		"[1,2]",
		"{not json",
	}
	for _, body := range invalid {
		r := h.do("PUT", subPath("bad"), body)
		if r.Status != http.StatusBadRequest || r.errorCode(t) != codeInvalidRequest {
			t.Errorf("%v: %d %s", body, r.Status, r.Body)
		}
	}
	if r := h.do("GET", subPath("bad"), nil); r.Status != http.StatusNotFound {
		t.Fatalf("a refused subscription exists: %d", r.Status)
	}
	if r := h.do("POST", subPath("bad"), "{}"); r.Status != http.StatusMethodNotAllowed {
		t.Fatalf("POST on a subscription: %d", r.Status)
	}
	if r := h.do("GET", "/v1/stream/__ds/nothing", nil); r.Status != http.StatusNotFound {
		t.Fatalf("unknown control route: %d", r.Status)
	}
}

func TestWebhookSignedAndSynchronousDoneAcks(t *testing.T) {
	h := startHarness(t, "", testOptions())
	rc := newReceiver(t, answerAlways(200, `{"done":true}`))
	h.createStream("events/before", `{"n":0}`) // existing work is not pending for a new subscription
	h.createSub("sync", webhookConfig(rc.URL))
	tail := h.createStream("events/a", `{"event":"created"}`)

	got := rc.next(5 * time.Second)
	if !sigRE.MatchString(got.Signature) || !verifySignature(t, h, got.Raw, got.Signature) {
		t.Fatalf("signature %q does not verify", got.Signature)
	}
	if verifySignature(t, h, append(got.Raw, ' '), got.Signature) {
		t.Fatal("signature verifies a different body")
	}
	b := got.Body
	if b.SubscriptionID != "sync" || b.Generation != 1 || !strings.HasPrefix(b.WakeID, "w_") || b.CallbackToken == "" ||
		b.CallbackURL != h.URL+"/v1/stream/__ds/subscriptions/sync/callback" {
		t.Fatalf("wake: %s", got.Raw)
	}
	var a *streamInfo
	for i := range b.Streams {
		if b.Streams[i].Path == "events/a" {
			a = &b.Streams[i]
		}
		if b.Streams[i].Path == "events/before" && b.Streams[i].HasPending {
			t.Fatalf("a stream that existed before the subscription is pending: %s", got.Raw)
		}
	}
	if a == nil || !a.HasPending || a.TailOffset != tail || a.AckedOffset != "-1" {
		t.Fatalf("events/a in wake: %s", got.Raw)
	}
	testwait.Until(t, "auto-ack", func() bool {
		s := streamOf(t, h.getSub("sync")["streams"], "events/a")
		return s["acked_offset"] == tail && s["has_pending"] == false
	}, 3*time.Second)
	rc.quiet(300 * time.Millisecond)

	// the next append makes the next wake, acknowledged the same way
	tail2 := h.appendStream("events/a", `{"event":"second"}`)
	got = rc.next(5 * time.Second)
	if got.Body.Generation != 2 {
		t.Fatalf("second wake: %s", got.Raw)
	}
	testwait.Until(t, "second auto-ack", func() bool {
		return streamOf(t, h.getSub("sync")["streams"], "events/a")["acked_offset"] == tail2
	}, 3*time.Second)
}

func TestCallbackAcksAndFencing(t *testing.T) {
	h := startHarness(t, "", testOptions())
	rc := newReceiver(t, answerAlways(200, `{}`))
	h.createSub("cb", webhookConfig(rc.URL))
	tail := h.createStream("events/c", `{"event":"created"}`)
	wake := rc.next(5 * time.Second).Body

	ack := map[string]any{"wake_id": wake.WakeID, "generation": wake.Generation,
		"acks": []any{map[string]any{"stream": "events/c", "offset": tail}}, "done": true}

	if r := h.do("POST", wake.CallbackURL, ack); r.Status != http.StatusUnauthorized || r.errorCode(t) != codeTokenInvalid {
		t.Fatalf("no token: %d %s", r.Status, r.Body)
	}
	if r := h.do("POST", wake.CallbackURL, ack, "Authorization", "Bearer "+wake.CallbackToken+"x"); r.Status != http.StatusUnauthorized {
		t.Fatalf("bad token: %d %s", r.Status, r.Body)
	}
	beyond := map[string]any{"wake_id": wake.WakeID, "generation": wake.Generation,
		"acks": []any{map[string]any{"stream": "events/c", "offset": "0000000000000009_0000000000000999"}}}
	if r := callback(h, wake, beyond); r.Status != http.StatusConflict || r.errorCode(t) != codeInvalidOffset {
		t.Fatalf("ack beyond tail: %d %s", r.Status, r.Body)
	}
	unknown := map[string]any{"wake_id": wake.WakeID, "generation": wake.Generation,
		"acks": []any{map[string]any{"stream": "events/nope", "offset": tail}}}
	if r := callback(h, wake, unknown); r.Status != http.StatusConflict || r.errorCode(t) != codeInvalidOffset {
		t.Fatalf("ack of an unknown stream: %d %s", r.Status, r.Body)
	}
	wrongGen := map[string]any{"wake_id": wake.WakeID, "generation": wake.Generation + 1}
	if r := callback(h, wake, wrongGen); r.Status != http.StatusConflict || r.errorCode(t) != codeFenced {
		t.Fatalf("wrong generation: %d %s", r.Status, r.Body)
	}
	// progress without done keeps the wake
	progress := map[string]any{"wake_id": wake.WakeID, "generation": wake.Generation, "acks": []any{}}
	if r := callback(h, wake, progress); r.Status != http.StatusOK {
		t.Fatalf("progress: %d %s", r.Status, r.Body)
	}

	r := callback(h, wake, ack)
	if r.Status != http.StatusOK || string(r.Body) != `{"next_wake":false,"ok":true}` {
		t.Fatalf("ack: %d %s", r.Status, r.Body)
	}
	if s := streamOf(t, h.getSub("cb")["streams"], "events/c"); s["acked_offset"] != tail {
		t.Fatalf("acked: %v", s)
	}
	r = callback(h, wake, ack)
	if r.Status != http.StatusConflict || r.errorCode(t) != codeFenced {
		t.Fatalf("repeated ack: %d %s", r.Status, r.Body)
	}
	rc.quiet(300 * time.Millisecond)
}

func TestOneWakeInFlightBatchesAppends(t *testing.T) {
	h := startHarness(t, "", testOptions())
	rc := newReceiver(t, answerAlways(200, `{}`))
	h.createSub("batch", map[string]any{"type": "webhook", "pattern": "events/*", "webhook": map[string]any{"url": rc.URL},
		"lease_ttl_ms": 60000})
	first := h.createStream("events/b", `{"n":1}`)
	wake := rc.next(5 * time.Second).Body
	var last string
	for i := 0; i < 3; i++ {
		last = h.appendStream("events/b", `{"n":2}`)
	}
	h.createStream("events/b2", `{"n":1}`)
	rc.quiet(300 * time.Millisecond) // one wake in flight

	r := callback(h, wake, map[string]any{"wake_id": wake.WakeID, "generation": wake.Generation,
		"acks": []any{map[string]any{"stream": "events/b", "offset": first}}, "done": true})
	if r.Status != http.StatusOK || string(r.Body) != `{"next_wake":true,"ok":true}` {
		t.Fatalf("done with work left: %d %s", r.Status, r.Body)
	}
	next := rc.next(5 * time.Second).Body
	if next.Generation != wake.Generation+1 || next.WakeID == wake.WakeID {
		t.Fatalf("next wake: %+v", next)
	}
	var b, b2 streamInfo
	for _, s := range next.Streams {
		switch s.Path {
		case "events/b":
			b = s
		case "events/b2":
			b2 = s
		}
	}
	if !b.HasPending || b.TailOffset != last || b.AckedOffset != first || !b2.HasPending {
		t.Fatalf("next wake streams: %+v", next.Streams)
	}
	r = callback(h, next, map[string]any{"wake_id": next.WakeID, "generation": next.Generation,
		"acks": []any{map[string]any{"stream": "events/b", "offset": last}, map[string]any{"path": "events/b2", "offset": b2.TailOffset}},
		"done": true})
	if r.Status != http.StatusOK || string(r.Body) != `{"next_wake":false,"ok":true}` {
		t.Fatalf("final done: %d %s", r.Status, r.Body)
	}
	rc.quiet(300 * time.Millisecond)
}

func TestWebhookRedeliveredAfterFailure(t *testing.T) {
	h := startHarness(t, "", testOptions())
	rc := newReceiver(t, func(n int, _ received) (int, string) {
		if n == 1 {
			return 500, `{"error":"boom"}`
		}
		return 200, `{"done":true}`
	})
	h.createSub("retry", webhookConfig(rc.URL))
	tail := h.createStream("events/r", `{"n":1}`)
	first := rc.next(5 * time.Second)
	second := rc.next(5 * time.Second)
	if second.Body.WakeID != first.Body.WakeID || second.Body.Generation != first.Body.Generation {
		t.Fatalf("redelivery is another wake: %s then %s", first.Raw, second.Raw)
	}
	if !verifySignature(t, h, second.Raw, second.Signature) {
		t.Fatal("redelivery is not signed")
	}
	testwait.Until(t, "ack after redelivery", func() bool {
		sub := h.getSub("retry")
		return sub["status"] == "active" && streamOf(t, sub["streams"], "events/r")["acked_offset"] == tail
	}, 3*time.Second)
}

// onTestClock is testOptions with the service on a test clock.
func onTestClock() (Options, *clock.Test) {
	clk := clock.NewTest(time.Now())
	opts := testOptions()
	opts.Clock = clk
	return opts, clk
}

// subTimes reads a subscription's next_attempt_at and lease_until once cond holds for
// its row (retry_count, phase).
func subTimes(t *testing.T, h *harness, id, what string, cond func(retries int, phase string) bool) (nextAttempt, leaseUntil *time.Time) {
	t.Helper()
	testwait.Until(t, what, func() bool {
		var retries int
		var phase string
		if err := h.Pool.QueryRow(t.Context(), `SELECT retry_count, coalesce(phase, ''), next_attempt_at, lease_until
			FROM ds_subscriptions WHERE id = $1`, id).Scan(&retries, &phase, &nextAttempt, &leaseUntil); err != nil {
			t.Fatal(err)
		}
		return cond(retries, phase)
	})
	return nextAttempt, leaseUntil
}

func TestWebhookFailingStatusAndBackoff(t *testing.T) {
	opts, clk := onTestClock()
	h := startHarness(t, "", opts)
	rc := newReceiver(t, answerAlways(503, `{}`))
	h.createSub("down", webhookConfig(rc.URL))
	h.createStream("events/d", `{"n":1}`)
	// retries wait 100ms, then 200ms (±20%) in the test configuration, of the clock
	for n, base := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond} {
		rc.next(5 * time.Second)
		next, _ := subTimes(t, h, "down", fmt.Sprintf("failure %d recorded", n+1), func(retries int, _ string) bool { return retries == n+1 })
		if delay := next.Sub(clk.Now()); delay < base*8/10 || delay > base*12/10 {
			t.Fatalf("retry %d after %v, want %v ±20%%", n+1, delay, base)
		}
		clk.Set(*next)
	}
	rc.next(5 * time.Second)
	testwait.Until(t, "failed status", func() bool { return h.getSub("down")["status"] == "failed" })
	var retries int
	var lastErr string
	if err := h.Pool.QueryRow(t.Context(), `SELECT retry_count, coalesce(last_error, '') FROM ds_subscriptions WHERE id = 'down'`).
		Scan(&retries, &lastErr); err != nil {
		t.Fatal(err)
	}
	if retries < 2 || !strings.Contains(lastErr, "503") {
		t.Fatalf("retry state: %d %q", retries, lastErr)
	}
}

func TestWebhookLeaseExpiryRedelivers(t *testing.T) {
	opts, clk := onTestClock()
	h := startHarness(t, "", opts)
	rc := newReceiver(t, answerAlways(200, `{}`)) // accepts, never calls back
	h.createSub("lease", webhookConfig(rc.URL))
	h.createStream("events/l", `{"n":1}`)
	first := rc.next(5 * time.Second)
	_, lease := subTimes(t, h, "lease", "the accepted wake is open under its lease",
		func(_ int, phase string) bool { return phase == phaseOpen })
	if want := clk.Now().Add(time.Second); !lease.Equal(want) {
		t.Fatalf("lease until %v, want %v (1 s after the answer)", lease, want)
	}
	clk.Set(*lease) // the lease lapses
	second := rc.next(5 * time.Second)
	if second.Body.Generation != first.Body.Generation+1 {
		t.Fatalf("redelivery generations %d then %d", first.Body.Generation, second.Body.Generation)
	}
	// the first wake's token is fenced now
	r := callback(h, first.Body, map[string]any{"wake_id": first.Body.WakeID, "generation": first.Body.Generation, "done": true})
	if r.Status != http.StatusConflict || r.errorCode(t) != codeFenced {
		t.Fatalf("stale wake callback: %d %s", r.Status, r.Body)
	}
}

func TestCallbackBeforeResponseEndsWake(t *testing.T) {
	h := startHarness(t, "", testOptions())
	var hh *harness
	rc := newReceiver(t, func(n int, r received) (int, string) {
		if n == 1 { // acknowledge through the callback before answering the request
			tail := r.Body.Streams[0].TailOffset
			res := callback(hh, r.Body, map[string]any{"wake_id": r.Body.WakeID, "generation": r.Body.Generation,
				"acks": []any{map[string]any{"stream": r.Body.Streams[0].Path, "offset": tail}}, "done": true})
			if res.Status != 200 {
				t.Errorf("callback during delivery: %d %s", res.Status, res.Body)
			}
		}
		return 200, `{}`
	})
	hh = h
	h.createSub("early", webhookConfig(rc.URL))
	tail := h.createStream("events/e", `{"n":1}`)
	rc.next(5 * time.Second)
	rc.quiet(1500 * time.Millisecond) // no lease and no redelivery for an ended wake
	if s := streamOf(t, h.getSub("early")["streams"], "events/e"); s["acked_offset"] != tail {
		t.Fatalf("acked: %v", s)
	}
}

func TestExplicitStreams(t *testing.T) {
	h := startHarness(t, "", testOptions())
	rc := newReceiver(t, answerAlways(200, `{"done":true}`))
	h.createSub("ex", map[string]any{"type": "webhook", "streams": []any{"manual/a"}, "webhook": map[string]any{"url": rc.URL}})
	if r := h.do("POST", subPath("ex")+"/streams", map[string]any{"streams": []any{"manual/b", "/manual/c/"}}); r.Status != http.StatusNoContent {
		t.Fatalf("add: %d %s", r.Status, r.Body)
	}
	if r := h.do("DELETE", subPath("ex")+"/streams/"+"manual%2Fb", nil); r.Status != http.StatusNoContent {
		t.Fatalf("remove: %d %s", r.Status, r.Body)
	}
	if r := h.do("DELETE", subPath("ex")+"/streams/manual/never", nil); r.Status != http.StatusNoContent {
		t.Fatalf("remove a stream never linked: %d %s", r.Status, r.Body)
	}
	sub := h.getSub("ex")
	list := sub["streams"].([]any)
	if len(list) != 2 {
		t.Fatalf("streams: %v", list)
	}
	a := streamOf(t, list, "manual/a")
	if a["link_type"] != "explicit" || a["acked_offset"] != "0000000000000000_0000000000000000" {
		t.Fatalf("manual/a: %v", a)
	}
	streamOf(t, list, "manual/c")
	for _, r := range []response{
		h.do("POST", subPath("nope")+"/streams", map[string]any{"streams": []any{"x"}}),
		h.do("DELETE", subPath("nope")+"/streams/x", nil),
	} {
		if r.Status != http.StatusNotFound {
			t.Fatalf("streams of a missing subscription: %d", r.Status)
		}
	}
	if r := h.do("POST", subPath("ex")+"/streams", map[string]any{"streams": []any{}}); r.Status != http.StatusBadRequest {
		t.Fatalf("empty streams: %d", r.Status)
	}

	// a removed stream does not wake; an explicit one that appears does, from its start
	h.createStream("manual/b", `{"n":1}`)
	rc.quiet(300 * time.Millisecond)
	tail := h.createStream("manual/a", `{"n":1}`)
	got := rc.next(5 * time.Second)
	var s streamInfo
	for _, x := range got.Body.Streams {
		if x.Path == "manual/a" {
			s = x
		}
	}
	if !s.HasPending || s.TailOffset != tail || s.LinkType != "explicit" {
		t.Fatalf("wake: %s", got.Raw)
	}
}
