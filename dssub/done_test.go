package dssub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/testwait"
)

// One transaction ends the wakes of many dones; each done is answered for itself: a
// refused one (an ack beyond the tail, a stale generation) writes nothing and leaves
// its wake in flight, and a second done of a wake that the first ended is a late one.
func TestEndWakesAnswersEachDone(t *testing.T) {
	h := startHarness(t, "", testOptions())
	ctx := context.Background()
	wakes, rc := openWakes(t, h, "d1", "d2", "d3")
	done := func(id string, gen int64, offset string) doneRequest {
		w := wakes[id]
		acks := []Ack{{Path: w.Streams[0].Path, Offset: offset}}
		req := WakeCallback{WakeID: w.WakeID, Token: w.CallbackToken, Generation: gen, Done: true}.request(acks)
		req.byWake = true
		return doneRequest{sub: id, wakeID: w.WakeID, token: w.CallbackToken, req: req}
	}
	tail := func(id string) string { return wakes[id].Streams[0].TailOffset }
	reqs := []doneRequest{
		done("d1", wakes["d1"].Generation, tail("d1")),
		done("d2", wakes["d2"].Generation, "9999999999999999_9999999999999999"),
		done("d3", wakes["d3"].Generation+1, tail("d3")),
		done("d1", wakes["d1"].Generation, tail("d1")),
	}
	out, err := h.Svc.endWakes(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	wantCode := func(i int, status int, code string) {
		t.Helper()
		var he *httpx.Error
		if !errors.As(out[i].err, &he) || he.Status != status || he.Code != code {
			t.Fatalf("done %d: want %d %s, got %+v", i, status, code, out[i])
		}
	}
	if out[0].err != nil || out[0].ended || out[0].nextWake {
		t.Fatalf("done 0 ends its wake, nothing is pending: %+v", out[0])
	}
	wantCode(1, http.StatusConflict, codeInvalidOffset)
	wantCode(2, http.StatusConflict, codeFenced)
	if out[3].err != nil || !out[3].ended {
		t.Fatalf("done 3 is late (done 0 ended its wake): %+v", out[3])
	}

	var wakeID *string
	var acked string
	for id, wantWake := range map[string]bool{"d1": false, "d2": true, "d3": true} {
		if err := h.Pool.QueryRow(ctx, `SELECT wake_id FROM ds_subscriptions WHERE id = $1`, id).Scan(&wakeID); err != nil {
			t.Fatal(err)
		}
		if got := wakeID != nil && *wakeID == wakes[id].WakeID; got != wantWake {
			t.Fatalf("%s: wake in flight %v (%v), want %v", id, got, wakeID, wantWake)
		}
		err := h.Pool.QueryRow(ctx, `SELECT CASE WHEN acked_seq < 0 THEN '-1' ELSE lpad(acked_seq::text, 16, '0') || '_' || lpad(acked_pos::text, 16, '0') END
			FROM ds_subscription_streams WHERE subscription_id = $1`, id).Scan(&acked)
		if err != nil {
			t.Fatal(err)
		}
		if moved := acked == tail(id); moved != (id == "d1") {
			t.Fatalf("%s: acked %s (tail %s): only d1's done moved its cursor", id, acked, tail(id))
		}
	}
	h.appendStream("events/d1", `{"event":"more"}`)
	if next := rc.next(5 * time.Second).Body; next.SubscriptionID != "d1" || next.Generation != wakes["d1"].Generation+1 {
		t.Fatalf("the next wake of d1: %+v", next)
	}
}

// One append pending for many subscriptions at once: their evaluations run together
// (one read, one transaction), and each subscription gets exactly its own wake.
func TestEvaluationsTogetherWakeEachSubscription(t *testing.T) {
	h := startHarness(t, "", testOptions())
	rc := newReceiver(t, answerAlways(200, `{}`))
	const subs = 40
	for i := range subs {
		h.createSub(fmt.Sprintf("many-%02d", i), webhookConfig(rc.URL))
	}
	h.createStream("events/shared", `{"event":"created"}`)
	seen := map[string]bool{}
	for range subs {
		w := rc.next(5 * time.Second).Body
		if seen[w.SubscriptionID] {
			t.Fatalf("%s woken twice", w.SubscriptionID)
		}
		seen[w.SubscriptionID] = true
		if w.Generation != 1 || len(w.Streams) != 1 || w.Streams[0].Path != "events/shared" || !w.Streams[0].HasPending {
			t.Fatalf("wake of %s: %+v", w.SubscriptionID, w)
		}
	}
	rc.quiet(300 * time.Millisecond)
	if n := rc.count(); n != subs {
		t.Fatalf("%d wakes for %d subscriptions", n, subs)
	}
	// each wake's snapshot is recorded (the statement that writes those of many)
	var snapped int
	err := h.Pool.QueryRow(context.Background(), `SELECT count(*) FROM ds_subscription_streams
		WHERE path = 'events/shared' AND wake_seq IS NOT NULL AND wake_seq > 0`).Scan(&snapped)
	if err != nil || snapped != subs {
		t.Fatalf("%d snapshots for %d wakes, %v", snapped, subs, err)
	}
}

// A batch steps the subscriptions it locked in id order (the order of their locks), then
// the others in their own order.
func TestStepOrderFollowsTheLocks(t *testing.T) {
	subs := map[string]*sub{"a": {ID: "a"}, "b": {ID: "b"}, "c": {ID: "c"}}
	for _, tc := range []struct{ ids, want string }{{"ba", "ab"}, {"cxbya", "abcxy"}, {"yx", "yx"}} {
		ids := []byte(tc.ids)
		order := stepOrder(len(ids), func(i int) string { return string(ids[i]) }, subs)
		got := make([]byte, len(order))
		for i, j := range order {
			got[i] = ids[j]
		}
		if string(got) != tc.want {
			t.Errorf("%s: stepped %s, want %s", tc.ids, got, tc.want)
		}
	}
}

// A pull-wake's next wake is appended to its wake stream, a lock shared with every other
// wake of that stream: batches leave pull-wakes to a transaction of their own, so that a
// batch waits for no stream. Its wake is still announced, and its done is answered
// "alone" (Callback's own transaction then ends the wake).
func TestBatchesLeavePullWakesAlone(t *testing.T) {
	h := startHarness(t, "", testOptions())
	ctx := context.Background()
	h.createStream("wake/pool", `[]`)
	h.createSub("pull", map[string]any{"type": "pull-wake", "pattern": "events/*", "wake_stream": "wake/pool", "lease_ttl_ms": 60000})
	h.createStream("events/p", `{"event":"created"}`)
	testwait.Until(t, "wake record", func() bool { return len(wakeRecords(t, h, "wake/pool")) == 1 }, 3*time.Second)
	wakeID, gen, token, _ := claimBody(t, h.do("POST", subPath("pull")+"/claim", map[string]any{"worker": "w1"}))
	req := WakeCallback{WakeID: wakeID, Token: token, Generation: gen, Done: true}.request(nil)
	req.byWake = true
	out, err := h.Svc.endWakes(ctx, []doneRequest{{sub: "pull", wakeID: wakeID, token: token, req: req}})
	if err != nil || len(out) != 1 || !out[0].alone {
		t.Fatalf("a pull-wake's done in a batch: %+v, %v", out, err)
	}
	var current string
	if err := h.Pool.QueryRow(ctx, `SELECT coalesce(wake_id, '') FROM ds_subscriptions WHERE id = 'pull'`).Scan(&current); err != nil || current != wakeID {
		t.Fatalf("the batch left the wake in flight: %q, %v", current, err)
	}
}

// A subscription another transaction holds does not hold up a batch: its done is
// answered "alone" at once (Callback then gives it a transaction of its own), and the
// other dones of the batch end their wakes.
func TestEndWakesLeavesHeldSubscriptionsAlone(t *testing.T) {
	h := startHarness(t, "", testOptions())
	ctx := context.Background()
	wakes, _ := openWakes(t, h, "free", "held")
	done := func(id string) doneRequest {
		w := wakes[id]
		acks := []Ack{{Path: w.Streams[0].Path, Offset: w.Streams[0].TailOffset}}
		req := WakeCallback{WakeID: w.WakeID, Token: w.CallbackToken, Generation: w.Generation, Done: true}.request(acks)
		req.byWake = true
		return doneRequest{sub: id, wakeID: w.WakeID, token: w.CallbackToken, req: req}
	}
	tx, err := h.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT 1 FROM ds_subscriptions WHERE id = 'held' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	answered := make(chan []doneAnswer, 1)
	go func() {
		out, err := h.Svc.endWakes(ctx, []doneRequest{done("held"), done("free")})
		if err != nil {
			t.Error(err)
		}
		answered <- out
	}()
	var out []doneAnswer
	select {
	case out = <-answered:
	case <-time.After(10 * time.Second):
		t.Fatal("the batch waited for a held subscription")
	}
	if len(out) != 2 || !out[0].alone || out[1].alone || out[1].ended || out[1].err != nil {
		t.Fatalf("answers: %+v", out)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// Through Callback, the held one's done takes its own transaction once the row is free.
	w := wakes["held"]
	next, ended, err := h.Svc.Callback(ctx, WakeCallback{WakeID: w.WakeID, Token: w.CallbackToken, Generation: w.Generation, Done: true,
		Acks: []Ack{{Path: w.Streams[0].Path, Offset: w.Streams[0].TailOffset}}})
	if err != nil || ended || next {
		t.Fatalf("the held subscription's done: next %v ended %v err %v", next, ended, err)
	}
	var inFlight int
	if err := h.Pool.QueryRow(ctx, `SELECT count(*) FROM ds_subscriptions WHERE id IN ('free', 'held') AND wake_id IS NOT NULL`).Scan(&inFlight); err != nil || inFlight != 0 {
		t.Fatalf("wakes still in flight: %d, %v", inFlight, err)
	}
}

// openWakes gives each id a webhook subscription of its own stream (events/<id>),
// creates the stream, and returns the wake each receives (answered 2xx: in flight) and
// the receiver.
func openWakes(t *testing.T, h *harness, ids ...string) (map[string]webhookBody, *receiver) {
	t.Helper()
	rc := newReceiver(t, answerAlways(200, `{}`))
	wakes := map[string]webhookBody{}
	for _, id := range ids {
		cfg := webhookConfig(rc.URL)
		cfg["pattern"] = "events/" + id
		cfg["lease_ttl_ms"] = 60000
		h.createSub(id, cfg)
		h.createStream("events/"+id, `{"event":"created"}`)
		w := rc.next(5 * time.Second).Body
		wakes[w.SubscriptionID] = w
	}
	// The receiver has the wakes; the service records their 200 (phase "open") in a
	// statement of its own right after. Until it has, that statement may hold the row a
	// test's batch is about to lock, and the batch would (rightly) skip it.
	for _, id := range ids {
		testwait.Until(t, id+" recorded as open", func() bool {
			var phase *string
			err := h.Pool.QueryRow(context.Background(), `SELECT phase FROM ds_subscriptions WHERE id = $1`, id).Scan(&phase)
			return err == nil && phase != nil && *phase == "open"
		}, 5*time.Second)
	}
	return wakes, rc
}

// A webhook's synchronous {"done":true} ends its wake in the dones' transaction: what
// the wake listed is acknowledged, and a done for a wake that already moved on changes
// nothing.
func TestEndWakesOfSynchronousDones(t *testing.T) {
	h := startHarness(t, "", testOptions())
	ctx := context.Background()
	wakes, _ := openWakes(t, h, "s1", "s2")
	s1, s2 := wakes["s1"], wakes["s2"]
	out, err := h.Svc.endWakes(ctx, []doneRequest{
		{sub: "s1", wakeID: s1.WakeID, generation: s1.Generation},
		{sub: "s2", wakeID: s2.WakeID, generation: s2.Generation + 1}, // not the wake in flight
	})
	if err != nil || len(out) != 2 || out[0] != (doneAnswer{}) || out[1] != (doneAnswer{}) {
		t.Fatalf("answers %+v, %v", out, err)
	}
	type row struct {
		wake   *string
		acked  int64
		listed *int64
	}
	read := func(id string) (r row) {
		err := h.Pool.QueryRow(ctx, `SELECT s.wake_id, l.acked_seq, l.wake_seq FROM ds_subscriptions s
			JOIN ds_subscription_streams l ON l.subscription_id = s.id WHERE s.id = $1`, id).Scan(&r.wake, &r.acked, &r.listed)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := read("s1"); r.wake != nil || r.listed == nil || r.acked != *r.listed {
		t.Fatalf("s1: wake %v, acked %d, listed %v: the wake ends with what it listed acknowledged", r.wake, r.acked, r.listed)
	}
	if r := read("s2"); r.wake == nil || *r.wake != s2.WakeID || (r.listed != nil && r.acked == *r.listed) {
		t.Fatalf("s2: wake %v, acked %d, listed %v: another generation's done changes nothing", r.wake, r.acked, r.listed)
	}
}
