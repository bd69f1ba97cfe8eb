package dssub

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/metrics"
	"github.com/entityd/entityd/internal/testwait"
)

// gatedTarget is a webhook server that keeps the requests of the subscriptions hold
// picks open until free is called (or the test ends), and answers the others
// {"done":true} at once. It counts requests per subscription and the most it had open.
type gatedTarget struct {
	URL, key string
	hold     func(sub string) bool
	released chan struct{}
	once     sync.Once
	arrived  chan string

	mu                sync.Mutex
	active, maxActive int
	bySub             map[string]int
}

func newGatedTarget(t *testing.T, hold func(sub string) bool) *gatedTarget {
	g := &gatedTarget{hold: hold, released: make(chan struct{}), arrived: make(chan string, 1000), bySub: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body webhookBody
		_ = json.NewDecoder(r.Body).Decode(&body)
		g.mu.Lock()
		g.active++
		g.maxActive = max(g.maxActive, g.active)
		g.bySub[body.SubscriptionID]++
		g.mu.Unlock()
		select {
		case g.arrived <- body.SubscriptionID:
		default:
		}
		if g.hold(body.SubscriptionID) {
			select {
			case <-g.released:
			case <-r.Context().Done():
			}
		}
		g.mu.Lock()
		g.active--
		g.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"done":true}`)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(g.free) // before Close, which waits for the requests it holds
	g.URL = srv.URL + "/hook"
	g.key = targetOf(g.URL)
	return g
}

func (g *gatedTarget) free() { g.once.Do(func() { close(g.released) }) }

// counts is the requests open now, the most open at once, and the requests of sub.
func (g *gatedTarget) counts(sub string) (active, maxActive, ofSub int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.active, g.maxActive, g.bySub[sub]
}

func (g *gatedTarget) waitFor(t *testing.T, sub string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case got := <-g.arrived:
			if got == sub {
				return
			}
		case <-timeout:
			t.Fatalf("no request of %s reached the target", sub)
		}
	}
}

func subOn(url, pattern string) map[string]any {
	return map[string]any{"type": "webhook", "pattern": pattern, "webhook": map[string]any{"url": url}, "lease_ttl_ms": 60000}
}

// acked waits until sub has acknowledged everything on stream.
func acked(t *testing.T, h *harness, sub, stream string) {
	t.Helper()
	testwait.Until(t, fmt.Sprintf("%s acknowledges %s", sub, stream), func() bool {
		return streamOf(t, h.getSub(sub)["streams"], stream)["has_pending"] == false
	}, 20*time.Second)
}

func retryState(t *testing.T, h *harness, sub string) (retries int, lastError string) {
	t.Helper()
	require.NoError(t, h.Pool.QueryRow(t.Context(),
		`SELECT retry_count, coalesce(last_error, '') FROM ds_subscriptions WHERE id = $1`, sub).Scan(&retries, &lastError))
	return retries, lastError
}

// A target that never answers holds its own slots only: with more of its wakes than the
// process has slots, another target's wake is still delivered at once.
func TestTarpitTargetDoesNotStarveOthers(t *testing.T) {
	opts := testOptions()
	opts.MaxDeliveries, opts.MaxDeliveriesPerTarget = 6, 2
	opts.DeliveryTimeout = time.Minute // the tarpit's requests stay open for the whole test
	h := startHarness(t, "", opts)
	tarpit := newGatedTarget(t, func(string) bool { return true })

	const wakes = 10 // more than the process's slots
	for i := range wakes {
		h.createSub(fmt.Sprintf("tarpit-%d", i), subOn(tarpit.URL, "tarpit/*"))
	}
	h.createStream("tarpit/a", `{"n":1}`)
	testwait.Until(t, "the tarpit holds its 2 slots and the other wakes wait for them", func() bool {
		busy, waiting := h.Svc.targets.state(tarpit.key)
		active, _, _ := tarpit.counts("")
		return busy == 2 && waiting == wakes-2 && active == 2
	}, 20*time.Second)
	require.GreaterOrEqual(t, testutil.ToFloat64(metrics.WebhookDeliveriesWaiting), float64(wakes-2))

	healthy := newReceiver(t, answerAlways(200, `{"done":true}`))
	h.createSub("healthy", subOn(healthy.URL, "healthy/*"))
	start := time.Now()
	h.createStream("healthy/a", `{"n":1}`)
	got := healthy.next(10 * time.Second)
	t.Logf("the healthy target's wake arrived %v after its commit", time.Since(start))
	require.Equal(t, "healthy", got.Body.SubscriptionID)

	active, maxActive, _ := tarpit.counts("")
	require.Equal(t, 2, active, "the tarpit still holds its slots")
	require.LessOrEqual(t, maxActive, 2, "the tarpit never had more requests than its slots")
	busy, waiting := h.Svc.targets.state(tarpit.key)
	require.Equal(t, [2]int{2, wakes - 2}, [2]int{busy, waiting}, "the tarpit's other wakes still wait")
}

// A delivery queued behind its target's only slot is delivered, once, when the slot
// comes free.
func TestQueuedDeliveryDeliveredOnceWhenTargetFrees(t *testing.T) {
	opts := testOptions()
	opts.MaxDeliveriesPerTarget = 1
	opts.DeliveryTimeout = time.Minute
	h := startHarness(t, "", opts)
	g := newGatedTarget(t, func(sub string) bool { return sub == "first" })

	h.createSub("first", subOn(g.URL, "a/*"))
	h.createSub("second", subOn(g.URL, "b/*"))
	h.createStream("a/x", `{"n":1}`)
	g.waitFor(t, "first")
	h.createStream("b/x", `{"n":1}`)
	testwait.Until(t, "second waits for the slot", func() bool {
		_, waiting := h.Svc.targets.state(g.key)
		return waiting == 1
	}, 20*time.Second)
	_, _, n := g.counts("second")
	require.Zero(t, n)

	g.free()
	g.waitFor(t, "second")
	acked(t, h, "first", "a/x")
	acked(t, h, "second", "b/x")
	_, maxActive, n := g.counts("second")
	require.Equal(t, 1, n, "delivered once")
	require.Equal(t, 1, maxActive)
	retries, _ := retryState(t, h, "second")
	require.Zero(t, retries, "it waited; it did not fail")
}

// A delivery that gets no slot within MaxDeliveryWait is not lost, nor posted once its
// attempt may have lapsed: it is a failed attempt, retried with backoff, and delivered
// once when the target frees up.
func TestDeliveryWaitExpiresIntoRetry(t *testing.T) {
	opts := testOptions()
	opts.MaxDeliveriesPerTarget = 1
	opts.DeliveryTimeout = time.Minute
	opts.MaxDeliveryWait = 150 * time.Millisecond
	h := startHarness(t, "", opts)
	g := newGatedTarget(t, func(sub string) bool { return sub == "first" })
	expired := testutil.ToFloat64(metrics.WebhookDeliveriesRefused.WithLabelValues("wait_expired"))

	h.createSub("first", subOn(g.URL, "a/*"))
	h.createSub("second", subOn(g.URL, "b/*"))
	h.createStream("a/x", `{"n":1}`)
	g.waitFor(t, "first")
	h.createStream("b/x", `{"n":1}`)
	testwait.Until(t, "second's waits expire and are retried", func() bool {
		retries, lastError := retryState(t, h, "second")
		return retries >= 2 && lastError == errSlotWaitExpired.Error()
	}, 20*time.Second)
	require.GreaterOrEqual(t, testutil.ToFloat64(metrics.WebhookDeliveriesRefused.WithLabelValues("wait_expired")), expired+2)
	_, _, n := g.counts("second")
	require.Zero(t, n, "nothing is posted past the wait")

	g.free()
	acked(t, h, "second", "b/x")
	_, maxActive, n := g.counts("second")
	require.Equal(t, 1, n, "delivered once")
	require.Equal(t, 1, maxActive)
	retries, lastError := retryState(t, h, "second")
	require.Equal(t, [2]any{0, ""}, [2]any{retries, lastError}, "a delivery clears the failure")
}

// When too many deliveries already wait for a target, one more is refused at once and
// retried with backoff; it is delivered once the line moves.
func TestTargetQueueFullIsRetried(t *testing.T) {
	opts := testOptions()
	opts.MaxDeliveriesPerTarget, opts.MaxQueuedPerTarget = 1, 1
	opts.DeliveryTimeout = time.Minute
	h := startHarness(t, "", opts)
	g := newGatedTarget(t, func(sub string) bool { return sub == "first" })

	for _, s := range []string{"first", "second", "third"} {
		h.createSub(s, subOn(g.URL, s+"/*"))
	}
	h.createStream("first/x", `{"n":1}`)
	g.waitFor(t, "first")
	h.createStream("second/x", `{"n":1}`)
	testwait.Until(t, "second waits", func() bool { _, waiting := h.Svc.targets.state(g.key); return waiting == 1 }, 20*time.Second)
	h.createStream("third/x", `{"n":1}`)
	testwait.Until(t, "third is refused while second waits", func() bool {
		retries, lastError := retryState(t, h, "third")
		return retries >= 1 && lastError == errTargetQueueFull.Error()
	}, 20*time.Second)

	g.free()
	for _, s := range []string{"first", "second", "third"} {
		acked(t, h, s, s+"/x")
	}
	for _, s := range []string{"first", "second", "third"} {
		_, maxActive, n := g.counts(s)
		require.Equal(t, 1, n, "%s delivered once", s)
		require.Equal(t, 1, maxActive)
	}
}
