package dssub

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/streamdb"
)

func TestTwoProcessesShareSubscriptions(t *testing.T) {
	a := startHarness(t, "", testOptions())
	b := startHarness(t, a.DBURL, testOptions())

	ja, jb := a.do("GET", "/v1/stream/__ds/jwks.json", nil), b.do("GET", "/v1/stream/__ds/jwks.json", nil)
	if ja.Status != 200 || string(ja.Body) != string(jb.Body) {
		t.Fatalf("processes publish different keys:\n%s\n%s", ja.Body, jb.Body)
	}

	rc := newReceiver(t, answerAlways(200, `{}`))
	a.createSub("shared", webhookConfig(rc.URL))
	// b learns about the subscription within a poll; a commit on b right now still wakes it
	tail := b.createStream("events/on-b", `{"n":1}`)
	got := rc.next(5 * time.Second)
	if !verifySignature(t, b, got.Raw, got.Signature) {
		t.Fatal("a wake signed by one process does not verify with the other's JWKS")
	}
	// any process takes the callback
	onB := strings.Replace(got.Body.CallbackURL, a.URL, b.URL, 1)
	r := b.do("POST", onB, map[string]any{"wake_id": got.Body.WakeID, "generation": got.Body.Generation,
		"acks": []any{map[string]any{"stream": "events/on-b", "offset": tail}}, "done": true},
		"Authorization", "Bearer "+got.Body.CallbackToken)
	if r.Status != http.StatusOK || string(r.Body) != `{"next_wake":false,"ok":true}` {
		t.Fatalf("callback on the other process: %d %s", r.Status, r.Body)
	}
	rc.quiet(300 * time.Millisecond)
	if s := streamOf(t, a.getSub("shared")["streams"], "events/on-b"); s["acked_offset"] != tail {
		t.Fatalf("acked: %v", s)
	}
}

func TestTwoProcessesOneWakeAtATime(t *testing.T) {
	a := startHarness(t, "", testOptions())
	b := startHarness(t, a.DBURL, testOptions())
	var active, maxActive atomic.Int32
	// Each wake is held open until every stream below is written: while one is held, both
	// processes have work for the subscription, and a second wake would overlap it.
	written := make(chan struct{})
	rc := newReceiver(t, func(int, received) (int, string) {
		n := active.Add(1)
		for {
			m := maxActive.Load()
			if n <= m || maxActive.CompareAndSwap(m, n) {
				break
			}
		}
		<-written
		active.Add(-1)
		return 200, `{"done":true}`
	})
	release := sync.OnceFunc(func() { close(written) })
	t.Cleanup(release) // before the receiver closes, which waits for held requests
	a.createSub("busy", webhookConfig(rc.URL))
	testwait.Until(t, "b to see the subscription", func() bool { return len(b.Svc.matcher.Load().subs) == 1 }, 3*time.Second)

	tails := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, h := range []*harness{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := fmt.Sprintf("events/s%d", i)
			tail := h.createStream(path, `{"n":0}`)
			for j := 0; j < 5; j++ {
				tail = h.appendStream(path, `{"n":1}`)
			}
			mu.Lock()
			tails[path] = tail
			mu.Unlock()
		}()
	}
	wg.Wait()
	release()
	testwait.Until(t, "every stream acknowledged", func() bool {
		streams := a.getSub("busy")["streams"]
		for path, tail := range tails {
			// (a stream is linked asynchronously after its creation: absent is not yet)
			if s := findStream(streams, path); s == nil || s["acked_offset"] != tail {
				return false
			}
		}
		return true
	}, 10*time.Second)
	if m := maxActive.Load(); m != 1 {
		t.Fatalf("%d wakes of one subscription were in flight at once", m)
	}
}

func TestReconcileFindsWorkMissedByADeadProcess(t *testing.T) {
	h := startHarness(t, "", testOptions())
	rc := newReceiver(t, answerAlways(200, `{"done":true}`))
	h.createSub("rec", webhookConfig(rc.URL))
	h.createStream("events/old", `{"n":1}`)
	rc.next(5 * time.Second)
	testwait.Until(t, "first ack", func() bool {
		return streamOf(t, h.getSub("rec")["streams"], "events/old")["has_pending"] == false
	}, 3*time.Second)

	// the process stops matching (as if it died right after committing)
	ctx := context.Background()
	h.Svc.Stop(ctx)
	res, err := h.Store.Append(ctx, &streamdb.AppendRequest{Path: "/events/old", Messages: [][]byte{[]byte(`{"n":2}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Store.Create(ctx, "/events/new", streamdb.CreateConfig{ContentType: "application/json"},
		[][]byte{[]byte(`{"n":1}`)}); err != nil {
		t.Fatal(err)
	}
	rc.quiet(300 * time.Millisecond)

	// a process that starts finds both
	opts := testOptions()
	opts.Logger = h.Svc.log
	svc := New(h.Store, opts)
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Stop(ctx) })
	got := rc.next(5 * time.Second)
	pending := map[string]bool{}
	for _, s := range got.Body.Streams {
		pending[s.Path] = s.HasPending
	}
	if !pending["events/old"] || !pending["events/new"] {
		t.Fatalf("reconciled wake: %s", got.Raw)
	}
	testwait.Until(t, "reconciled work acknowledged", func() bool {
		var acked int64
		_ = h.Pool.QueryRow(ctx, `SELECT acked_seq FROM ds_subscription_streams WHERE subscription_id = 'rec' AND path = 'events/old'`).Scan(&acked)
		return acked == res.Tail.Seq
	}, 3*time.Second)
}

func TestRecreatedStreamStartsOver(t *testing.T) {
	h := startHarness(t, "", testOptions())
	rc := newReceiver(t, answerAlways(200, `{"done":true}`))
	h.createSub("again", webhookConfig(rc.URL))
	tail := h.createStream("events/x", `{"n":1}`)
	rc.next(5 * time.Second)
	testwait.Until(t, "ack", func() bool {
		return streamOf(t, h.getSub("again")["streams"], "events/x")["acked_offset"] == tail
	}, 3*time.Second)
	if r := h.do("DELETE", "/v1/stream/events/x", nil); r.Status != http.StatusNoContent {
		t.Fatalf("delete stream: %d", r.Status)
	}
	if again := h.createStream("events/x", `{"n":1}`); again != tail {
		t.Fatalf("re-created stream has tail %s, want the same %s for this test", again, tail)
	}
	got := rc.next(5 * time.Second)
	for _, s := range got.Body.Streams {
		if s.Path == "events/x" && (!s.HasPending || s.AckedOffset != "-1") {
			t.Fatalf("re-created stream in wake: %+v", s)
		}
	}
}

func TestKeysSurviveRestart(t *testing.T) {
	a := startHarness(t, "", testOptions())
	kid := a.Svc.keys.Load().signKID
	b := startHarness(t, a.DBURL, testOptions())
	if b.Svc.keys.Load().signKID != kid {
		t.Fatal("a second process signs with another key")
	}
	var n int
	if err := a.Pool.QueryRow(context.Background(), `SELECT count(*) FROM ds_keys`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d keys (%v), want one Ed25519 and one HMAC key", n, err)
	}
}
