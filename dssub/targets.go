package dssub

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/entityd/entityd/internal/metrics"
)

// A webhook delivery takes two slots before its request: first one of its target, then
// one of the process (MaxDeliveries). A target that answers slowly or never (a tarpit)
// then holds at most its own MaxDeliveriesPerTarget slots, and the process's slots stay
// free for every other target. A target is the webhook URL's origin, not a
// subscription: a dispatch policy makes one subscription per entity, all posting to the
// same URL. Deliveries waiting for their target hold no slot of the process.
//
// The wait is bounded twice. In time: a delivery must start its request by its startBy
// (MaxDeliveryWait after its attempt was taken), so that the attempt's window, which
// covers the wait and the request, never lapses while this process may still post it;
// otherwise another process, or this one, would take the attempt again and the wake
// would be delivered twice at once. In memory: at most MaxQueuedPerTarget deliveries
// wait for one target. A delivery refused either way is recorded as a failed attempt
// and retried with backoff (a busy target is a failing one), so it is not lost.

var (
	errTargetQueueFull = errors.New("webhook target busy: too many deliveries are waiting for it")
	errSlotWaitExpired = errors.New("webhook target busy: no delivery slot came free in time")
)

// refusalReason is the metric label of a refused delivery.
func refusalReason(err error) string {
	if errors.Is(err, errTargetQueueFull) {
		return "queue_full"
	}
	return "wait_expired"
}

// targetSlots limits the webhook requests in flight per target, serving waiters first
// come, first served.
type targetSlots struct {
	perTarget, maxQueued int

	mu      sync.Mutex
	targets map[string]*target // only targets with a slot held; removed when idle
}

type target struct {
	busy    int           // slots held
	waiting []*slotWaiter // in arrival order
}

type slotWaiter struct {
	ready   chan struct{} // closed when the slot is handed over
	granted bool          // under targetSlots.mu
}

func newTargetSlots(perTarget, maxQueued int) *targetSlots {
	return &targetSlots{perTarget: perTarget, maxQueued: maxQueued, targets: map[string]*target{}}
}

// acquire takes a slot of target key, waiting in line until deadline at most.
func (ts *targetSlots) acquire(ctx context.Context, key string, deadline time.Time) error {
	ts.mu.Lock()
	t := ts.targets[key]
	if t == nil {
		t = &target{}
		ts.targets[key] = t
	}
	if t.busy < ts.perTarget && len(t.waiting) == 0 {
		t.busy++
		ts.mu.Unlock()
		return nil
	}
	if len(t.waiting) >= ts.maxQueued {
		ts.mu.Unlock()
		return errTargetQueueFull
	}
	w := &slotWaiter{ready: make(chan struct{})}
	t.waiting = append(t.waiting, w)
	ts.mu.Unlock()

	metrics.WebhookDeliveriesWaiting.Inc()
	defer metrics.WebhookDeliveriesWaiting.Dec()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var err error
	select {
	case <-w.ready:
		return nil
	case <-timer.C:
		err = errSlotWaitExpired
	case <-ctx.Done():
		err = ctx.Err()
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if w.granted {
		// handed a slot just as it gave up: pass it on to the next in line
		ts.releaseLocked(key, t)
		return err
	}
	for i, o := range t.waiting {
		if o == w {
			t.waiting = append(t.waiting[:i], t.waiting[i+1:]...)
			break
		}
	}
	if t.busy == 0 && len(t.waiting) == 0 {
		delete(ts.targets, key)
	}
	return err
}

// release gives back a slot of target key: to the first in line, or to the target.
func (ts *targetSlots) release(key string) {
	ts.mu.Lock()
	ts.releaseLocked(key, ts.targets[key])
	ts.mu.Unlock()
}

func (ts *targetSlots) releaseLocked(key string, t *target) {
	if len(t.waiting) > 0 {
		w := t.waiting[0]
		t.waiting[0] = nil
		t.waiting = t.waiting[1:]
		w.granted = true
		close(w.ready)
		return
	}
	t.busy--
	if t.busy == 0 {
		delete(ts.targets, key)
	}
}

// state is what target key holds and how many wait for it (tests, diagnostics).
func (ts *targetSlots) state(key string) (busy, waiting int) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t := ts.targets[key]; t != nil {
		return t.busy, len(t.waiting)
	}
	return 0, 0
}

// targetOf is the target a webhook URL's requests count against: its origin, with the
// scheme's port made explicit (http://h and http://h:80 are one target). Host names are
// not resolved: two names (or ports) of one server are two targets, each with its own
// slots, and only MaxDeliveries bounds them together.
func targetOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw // its request fails anyway
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		port = "80"
		if scheme == "https" {
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// takeSlots takes job's target slot, then a slot of the process, by job.startBy at the
// latest; the caller gives both back with releaseSlots.
func (s *Service) takeSlots(ctx context.Context, job *delivery) error {
	start := time.Now()
	job.target = targetOf(job.url)
	if err := s.targets.acquire(ctx, job.target, job.startBy); err != nil {
		return err
	}
	select {
	case s.deliveries <- struct{}{}:
	default:
		// every slot of the process is taken (by requests to several targets)
		metrics.WebhookDeliveriesWaiting.Inc()
		timer := time.NewTimer(time.Until(job.startBy))
		var err error
		select {
		case s.deliveries <- struct{}{}:
		case <-timer.C:
			err = errSlotWaitExpired
		case <-ctx.Done():
			err = ctx.Err()
		}
		timer.Stop()
		metrics.WebhookDeliveriesWaiting.Dec()
		if err != nil {
			s.targets.release(job.target)
			return err
		}
	}
	if time.Now().After(job.startBy) {
		// free slots, but a late start (a slow commit before the launch): the attempt's
		// window no longer covers a whole request
		s.releaseSlots(job)
		return errSlotWaitExpired
	}
	metrics.WebhookSlotWait.Observe(time.Since(start).Seconds())
	return nil
}

func (s *Service) releaseSlots(job *delivery) {
	<-s.deliveries
	s.targets.release(job.target)
}
