package dssub

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/entityd/entityd/internal/clock"
	"github.com/entityd/entityd/internal/testwait"
)

// wakeRecords reads the wake stream.
func wakeRecords(t *testing.T, h *harness, stream string) []wakeRecord {
	t.Helper()
	r := h.do("GET", "/v1/stream/"+stream+"?offset=-1", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("read wake stream: %d %s", r.Status, r.Body)
	}
	var recs []wakeRecord
	if err := json.Unmarshal(r.Body, &recs); err != nil {
		t.Fatalf("wake stream: %v %s", err, r.Body)
	}
	return recs
}

func claimBody(t *testing.T, r response) (wakeID string, generation int64, token string, streams any) {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("claim: %d %s", r.Status, r.Body)
	}
	m := r.json(t)
	return m["wake_id"].(string), int64(m["generation"].(float64)), m["token"].(string), m["streams"]
}

func TestPullWakeClaimAckRelease(t *testing.T) {
	h := startHarness(t, "", testOptions())
	h.createStream("wake/pool", `[]`)
	h.createSub("pull", map[string]any{"type": "pull-wake", "pattern": "events/*", "wake_stream": "wake/pool", "lease_ttl_ms": 1000})

	if r := h.do("POST", subPath("pull")+"/claim", map[string]any{"worker": "w1"}); r.Status != http.StatusConflict || r.errorCode(t) != codeNoPendingWork {
		t.Fatalf("claim without work: %d %s", r.Status, r.Body)
	}
	tail := h.createStream("events/p", `{"event":"created"}`)
	testwait.Until(t, "wake record", func() bool { return len(wakeRecords(t, h, "wake/pool")) == 1 }, 3*time.Second)
	rec := wakeRecords(t, h, "wake/pool")[0]
	if rec.Type != "wake" || rec.SubscriptionID != "pull" || rec.Stream != "events/p" || rec.Generation != 1 {
		t.Fatalf("wake record: %+v", rec)
	}

	if r := h.do("POST", subPath("pull")+"/claim", map[string]any{}); r.Status != http.StatusBadRequest {
		t.Fatalf("claim without worker: %d", r.Status)
	}
	wakeID, gen, token, streams := claimBody(t, h.do("POST", subPath("pull")+"/claim", map[string]any{"worker": "worker-1"}))
	if wakeID != rec.WakeID || gen != 1 {
		t.Fatalf("claimed %s/%d, announced %s/%d", wakeID, gen, rec.WakeID, rec.Generation)
	}
	if s := streamOf(t, streams, "events/p"); s["tail_offset"] != tail || s["has_pending"] != true {
		t.Fatalf("claimed streams: %v", streams)
	}
	r := h.do("POST", subPath("pull")+"/claim", map[string]any{"worker": "worker-2"})
	if r.Status != http.StatusConflict || r.errorCode(t) != codeAlreadyClaimed {
		t.Fatalf("second claim: %d %s", r.Status, r.Body)
	}
	if e := r.json(t)["error"].(map[string]any); e["current_holder"] != "worker-1" {
		t.Fatalf("holder: %v", e)
	}
	// the webhook callback route does not take pull tokens for another subscription
	if r := h.do("POST", subPath("other")+"/ack", map[string]any{}, "Authorization", "Bearer "+token); r.Status != http.StatusNotFound {
		t.Fatalf("ack on a missing subscription: %d", r.Status)
	}

	ack := map[string]any{"wake_id": wakeID, "generation": gen, "acks": []any{map[string]any{"stream": "events/p", "offset": tail}}, "done": true}
	r = h.do("POST", subPath("pull")+"/ack", ack, "Authorization", "Bearer "+token)
	if r.Status != http.StatusOK || string(r.Body) != `{"next_wake":false,"ok":true}` {
		t.Fatalf("ack: %d %s", r.Status, r.Body)
	}
	if r := h.do("POST", subPath("pull")+"/ack", ack, "Authorization", "Bearer "+token); r.Status != http.StatusConflict || r.errorCode(t) != codeFenced {
		t.Fatalf("repeated ack: %d %s", r.Status, r.Body)
	}

	// new work right after: claimable at once, whether or not the wake record is written yet
	h.appendStream("events/p", `{"event":"second"}`)
	wakeID2, gen2, token2, _ := claimBody(t, h.do("POST", subPath("pull")+"/claim", map[string]any{"worker": "worker-1"}))
	if gen2 != 2 {
		t.Fatalf("second claim generation %d", gen2)
	}
	if r := h.do("POST", subPath("pull")+"/release", map[string]any{"wake_id": wakeID2, "generation": gen2},
		"Authorization", "Bearer "+token2); r.Status != http.StatusNoContent {
		t.Fatalf("release: %d %s", r.Status, r.Body)
	}
	// released work is still pending: a new wake is announced and can be claimed
	testwait.Until(t, "wake record after release", func() bool {
		recs := wakeRecords(t, h, "wake/pool")
		return recs[len(recs)-1].Generation == 3
	}, 3*time.Second)
	_, gen3, _, _ := claimBody(t, h.do("POST", subPath("pull")+"/claim", map[string]any{"worker": "worker-2"}))
	if gen3 != 3 {
		t.Fatalf("claim after release: generation %d", gen3)
	}
	if r := h.do("POST", subPath("pull")+"/callback", map[string]any{}, "Authorization", "Bearer "+token2); r.Status != http.StatusConflict {
		t.Fatalf("stale token on callback: %d %s", r.Status, r.Body)
	}
}

// TestPullWakeLeaseExpiry: a claim's lease (1 s) is extended by progress acks, and when
// it lapses the work is announced again. The lease runs on a test clock the test moves.
func TestPullWakeLeaseExpiry(t *testing.T) {
	clk := clock.NewTest(time.Now())
	opts := testOptions()
	opts.Clock = clk
	h := startHarness(t, "", opts)
	h.createStream("wake/l", `[]`)
	h.createSub("pl", map[string]any{"type": "pull-wake", "streams": []any{"jobs/1"}, "wake_stream": "wake/l", "lease_ttl_ms": 1000})
	h.createStream("jobs/1", `{"n":1}`)
	wakeID, gen, token, _ := claimBody(t, h.do("POST", subPath("pl")+"/claim", map[string]any{"worker": "slow"}))

	// progress acks keep the lease
	clk.Advance(600 * time.Millisecond)
	if r := h.do("POST", subPath("pl")+"/ack", map[string]any{"wake_id": wakeID, "generation": gen},
		"Authorization", "Bearer "+token); r.Status != http.StatusOK {
		t.Fatalf("progress ack: %d %s", r.Status, r.Body)
	}
	clk.Advance(999 * time.Millisecond) // a millisecond before the extended lease ends
	if r := h.do("POST", subPath("pl")+"/claim", map[string]any{"worker": "fast"}); r.Status != http.StatusConflict {
		t.Fatalf("claim during an extended lease: %d %s", r.Status, r.Body)
	}
	// then the lease lapses: the work is announced again and another worker takes it
	clk.Advance(time.Millisecond)
	testwait.Until(t, "the second announcement", func() bool {
		recs := wakeRecords(t, h, "wake/l")
		return len(recs) == 2 && recs[1].Generation == gen+1
	})
	_, gen2, _, streams := claimBody(t, h.do("POST", subPath("pl")+"/claim", map[string]any{"worker": "fast"}))
	if gen2 != gen+1 || streamOf(t, streams, "jobs/1")["has_pending"] != true {
		t.Fatalf("claim after expiry: %d %v", gen2, streams)
	}
	r := h.do("POST", subPath("pl")+"/ack", map[string]any{"wake_id": wakeID, "generation": gen, "done": true},
		"Authorization", "Bearer "+token)
	if r.Status != http.StatusConflict || r.errorCode(t) != codeFenced {
		t.Fatalf("ack of the lapsed claim: %d %s", r.Status, r.Body)
	}
}

func TestPullWakeIgnoresItsOwnWakeStream(t *testing.T) {
	h := startHarness(t, "", testOptions())
	h.createStream("q/wake", `[]`)
	h.createSub("self", map[string]any{"type": "pull-wake", "pattern": "q/**", "wake_stream": "q/wake", "lease_ttl_ms": 1000})
	tail := h.createStream("q/job", `{"n":1}`)
	testwait.Until(t, "wake record", func() bool { return len(wakeRecords(t, h, "q/wake")) == 1 }, 3*time.Second)
	wakeID, gen, token, streams := claimBody(t, h.do("POST", subPath("self")+"/claim", map[string]any{"worker": "w"}))
	for _, s := range streams.([]any) {
		if s.(map[string]any)["path"] == "q/wake" {
			t.Fatalf("the wake stream is linked to its own subscription: %v", streams)
		}
	}
	r := h.do("POST", subPath("self")+"/ack", map[string]any{"wake_id": wakeID, "generation": gen,
		"acks": []any{map[string]any{"stream": "q/job", "offset": tail}}, "done": true}, "Authorization", "Bearer "+token)
	if r.Status != http.StatusOK || string(r.Body) != `{"next_wake":false,"ok":true}` {
		t.Fatalf("ack: %d %s", r.Status, r.Body)
	}
	// The marker: new work on another stream wakes the subscription. Had the first wake
	// record woken it, that wake would have come first, announcing q/wake.
	h.createStream("q/job2", `{"n":2}`)
	testwait.Until(t, "a wake for the marker", func() bool { return len(wakeRecords(t, h, "q/wake")) >= 2 }, 3*time.Second)
	recs := wakeRecords(t, h, "q/wake")
	if len(recs) != 2 || recs[1].Stream != "q/job2" {
		t.Fatalf("wake records %+v: the wake stream woke its own subscription", recs)
	}
}
