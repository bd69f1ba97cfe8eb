package wake

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/clock"
)

// A process's claims are only as good as its lease. The heartbeat renews the lease; it
// is surely valid until three quarters of it after the last successful heartbeat was
// sent (the rest is margin for the heartbeat's own time and for clocks). When that
// passes without a renewal, or a heartbeat finds that the lease had lapsed in the
// database, another process may have claimed any entity this one holds. A worker that
// went on — finishing a run, or starting the next one once the lease is renewed — would
// then run the entity next to its new holder: two runs of one entity at once, of which
// the fence refuses the stale one's writes, but both run. So the lease term ends: runs
// under way are cancelled (which costs no attempt), every worker lets go, and claims
// wait. The next successful heartbeat starts a new term, in which the entities are
// claimed again, with new epochs, wherever nobody else took them.

// errLeaseLost stops a worker whose lease term ended: its claim may be another
// process's now.
var errLeaseLost = errors.New("wake: this process's lease may have lapsed; its claims are void")

// leaseTerm is a stretch of time through which this process's lease stayed surely
// valid. A claim belongs to the term it was made in and is good only while it lasts.
type leaseTerm struct {
	ctx context.Context // done when the term ends
	end context.CancelFunc
}

func newLeaseTerm() *leaseTerm {
	ctx, cancel := context.WithCancel(context.Background())
	return &leaseTerm{ctx: ctx, end: cancel}
}

func (t *leaseTerm) over() bool            { return t.ctx.Err() != nil }
func (t *leaseTerm) done() <-chan struct{} { return t.ctx.Done() }

// leaseDeadline is when the lease stops being surely valid.
func (d *Dispatcher) leaseDeadline() time.Time { return time.Unix(0, d.leaseOK.Load()) }

// startTerm begins the first term after the holder registered at sent.
func (d *Dispatcher) startTerm(sent time.Time) {
	d.leaseMu.Lock()
	defer d.leaseMu.Unlock()
	d.leaseOK.Store(sent.Add(d.opts.Lease * 3 / 4).UnixNano())
	d.term = newLeaseTerm()
}

// renewLease is the heartbeat, every Options.Heartbeat.
func (d *Dispatcher) renewLease(ctx context.Context) {
	sent := d.clock.Now()
	lapsed, err := heartbeat(ctx, d.pool, d.holder, d.opts.Lease, d.clock.SQL())
	if err != nil {
		if ctx.Err() == nil {
			d.warn(&d.logs.heartbeat, "lease heartbeat failed; handlers wait until it succeeds", zap.Error(err))
		}
		return
	}
	d.renewed(sent, lapsed)
}

// renewed records a heartbeat sent at sent that succeeded; lapsed: the database found
// that the lease had run out before it. A lease that was not surely valid the whole time
// since the last renewal ends the term; a new one starts if this renewal is still fresh.
func (d *Dispatcher) renewed(sent time.Time, lapsed bool) {
	d.leaseMu.Lock()
	defer d.leaseMu.Unlock()
	now := d.clock.Now()
	if lapsed || !now.Before(d.leaseDeadline()) {
		d.endTermLocked(lapsed)
	}
	deadline := sent.Add(d.opts.Lease * 3 / 4)
	d.leaseOK.Store(deadline.UnixNano())
	poke(d.leaseMoved)
	if d.term.over() && now.Before(deadline) {
		d.term = newLeaseTerm()
		d.log.Info("lease renewed: claiming entities again")
		d.requestRescan() // the sweep claims what waited for the new term
	}
}

// endTermLocked ends the current term (callers hold leaseMu): runs under way are
// cancelled and workers let go.
func (d *Dispatcher) endTermLocked(lapsed bool) {
	if d.term.over() {
		return
	}
	d.term.end()
	d.log.Warn("lease not surely valid (heartbeats late or failing): runs are cancelled and entities let go until it is renewed",
		zap.Bool("lapsed_in_database", lapsed))
}

// watchLease ends the term when the lease deadline passes without a renewal, so that
// runs under way stop before another process may claim their entities.
func (d *Dispatcher) watchLease(ctx context.Context) {
	for {
		d.leaseMu.Lock()
		deadline, over := d.leaseDeadline(), d.term.over()
		d.leaseMu.Unlock()
		var timer *clock.Timer
		var fire <-chan time.Time
		if !over {
			timer = d.clock.TimerAt(deadline)
			fire = timer.C
		}
		select {
		case <-ctx.Done():
		case <-d.leaseMoved:
		case <-fire:
			d.leaseMu.Lock()
			if !d.clock.Now().Before(d.leaseDeadline()) {
				d.endTermLocked(false)
			}
			d.leaseMu.Unlock()
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// liveTerm is the current term, or nil while the lease is not surely valid (a claim
// made now would not be good).
func (d *Dispatcher) liveTerm() *leaseTerm {
	d.leaseMu.Lock()
	defer d.leaseMu.Unlock()
	if d.term.over() || !d.clock.Now().Before(d.leaseDeadline()) {
		return nil
	}
	return d.term
}

// leaseHolds reports errLeaseLost unless the lease is surely valid now and has been
// since term began, so that no handler run starts after another process may have taken
// its entity over. (When the deadline has passed, the term is ending: the watch or the
// next heartbeat ends it.)
func (d *Dispatcher) leaseHolds(term *leaseTerm) error {
	if !d.clock.Now().Before(d.leaseDeadline()) || term.over() {
		return errLeaseLost
	}
	return nil
}
