package wake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"go.uber.org/zap"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/clock"
	"github.com/entityd/entityd/internal/dberr"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/metrics"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wire"
)

// worker delivers the work of one claimed entity, one unit at a time, in stream order.
type worker struct {
	d        *Dispatcher
	url      string
	typ      string
	streamID int64
	fence    fence
	pokeCh   chan struct{}
	log      *zap.Logger

	meta     *streamdb.Meta
	status   entity.Status
	scanned  int64 // acknowledged scan position
	attempts int
	retryAt  time.Time
	consumed []int64
	read     streamdb.Offset // everything up to here has been read and applied to state
	state    *wire.State
	scanner  *wire.Scanner
	queue    []*item       // work read but not yet acknowledged
	trailing []wire.HeldOp // held changes after the last queued item
	trouble  time.Duration // the last pause after a machinery failure (0: none since progress)
}

func newWorker(d *Dispatcher, c claimed) *worker {
	w := &worker{d: d, url: c.url, typ: c.entityType, streamID: c.streamID, pokeCh: make(chan struct{}, 1),
		fence: fence{url: c.url, holder: d.holder, epoch: c.epoch}, scanned: c.scanned, attempts: c.attempts,
		consumed: c.consumed, log: d.log.With(zap.String("entity", c.url))}
	if c.retryAt != nil {
		w.retryAt = *c.retryAt
	}
	return w
}

// poke tells the worker there may be new work. Callers hold d.mu (see workerDone).
func (w *worker) poke() {
	select {
	case w.pokeCh <- struct{}{}:
	default:
	}
}

// run is the worker's life: load, deliver until idle (or paused, stopped, fenced), let go.
func (w *worker) run(ctx context.Context) {
	reclaim := false
	defer func() { w.d.workerDone(ctx, w, reclaim) }()
	unwatch := w.d.streams.Watch(w.streamID)
	defer unwatch()
	if err := w.load(ctx); err != nil && !w.recoverFrom(ctx, err) {
		return
	}
	idle := clock.After(w.d.clock, w.d.opts.IdleRelease)
	defer func() { idle.Stop() }()
	for {
		if ctx.Err() != nil {
			return // shutting down: Stop releases everything at once
		}
		if !w.status.Deliverable() {
			reclaim = w.finish(ctx)
			return
		}
		progressed, err := w.step(ctx)
		switch {
		case errors.Is(err, ErrFenced):
			metrics.WakesFenced.WithLabelValues(w.typ).Inc()
			w.log.Info("entity claimed by another process; stopping delivery here")
			return
		case errors.Is(err, ErrEntityEnded):
			w.releaseQuietly(ctx)
			return
		case err != nil:
			if !w.recoverFrom(ctx, err) {
				return
			}
			continue
		}
		if progressed {
			w.trouble = 0
			idle.Stop()
			idle = clock.After(w.d.clock, w.d.opts.IdleRelease)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-w.pokeCh:
		case <-idle.C:
			reclaim = w.finish(ctx)
			return
		}
	}
}

// load reads the entity's status, its held messages and its stream metadata, and
// rebuilds the materialized state from the whole stream.
func (w *worker) load(ctx context.Context) error {
	var retryAt *time.Time
	var epoch int64
	var holder string
	err := w.d.pool.QueryRow(ctx, sqlLoadState, w.url).
		Scan(&w.status, &w.scanned, &w.attempts, &retryAt, &w.consumed, &epoch, &holder)
	if err != nil {
		return fmt.Errorf("wake: load %s: %w", w.url, err)
	}
	if epoch != w.fence.epoch || holder != w.fence.holder {
		return ErrFenced
	}
	w.retryAt = time.Time{}
	if retryAt != nil {
		w.retryAt = *retryAt
	}
	held := map[string]wire.HeldMessage{}
	rows, err := w.d.pool.Query(ctx, sqlHeldMessages, w.url)
	if err != nil {
		return err
	}
	for rows.Next() {
		var k string
		var h wire.HeldMessage
		if err := rows.Scan(&k, &h.Seq, &h.Value); err != nil {
			rows.Close()
			return err
		}
		held[k] = h
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	m, err := w.d.streams.Lookup(ctx, entitypath.Main(w.url))
	if err != nil {
		if errors.Is(err, streamdb.ErrNotFound) || errors.Is(err, streamdb.ErrGone) {
			return ErrEntityEnded
		}
		return err
	}
	w.meta = m
	w.scanner = wire.NewScanner(held, w.consumed)
	// Start reading where delivery stands; the materialized state is built only when a
	// handler asks for it, so claiming an entity with a long history stays cheap.
	w.state = nil
	if w.read, err = w.d.streams.OffsetAt(ctx, w.streamID, w.scanned); err != nil {
		return fmt.Errorf("wake: position of %s: %w", w.url, err)
	}
	w.queue, w.trailing = nil, nil
	return nil
}

// materialize returns the entity's state, reading the stream from the start the first
// time. It reads up to the current tail; the events after w.read are applied again, in
// order, when readMore reaches them, which leaves the same state.
func (w *worker) materialize(ctx context.Context) (*wire.State, error) {
	if w.state != nil {
		return w.state, nil
	}
	tail, _, err := w.d.streams.CurrentTail(ctx, w.streamID)
	if err != nil {
		return nil, err
	}
	st := wire.NewState()
	for from := streamdb.Start; from.Seq < tail.Seq; {
		msgs, err := w.d.streams.Read(ctx, w.meta, from, tail)
		if err != nil {
			return nil, err
		}
		if len(msgs) == 0 {
			break
		}
		for _, m := range msgs {
			st.Apply(m.End.Seq, m.Data)
		}
		from = msgs[len(msgs)-1].End
	}
	w.state = st
	return st, nil
}

// step reads what is new on the stream and delivers the first unit of work, if any.
func (w *worker) step(ctx context.Context) (bool, error) {
	if len(w.queue) == 0 {
		n, err := w.readMore(ctx)
		if err != nil || n == 0 {
			return false, err
		}
		if len(w.queue) == 0 {
			return true, nil
		}
	}
	it := w.queue[0]
	if w.attempts > 0 && !clock.Sleep(ctx, w.d.clock, clock.Until(w.d.clock, w.retryAt)) {
		return false, nil
	}
	if err := w.d.waitForLease(ctx); err != nil {
		return false, nil
	}
	if err := w.deliver(ctx, it); err != nil {
		return false, err
	}
	return true, nil
}

// readMore reads events after w.read, applies them to the state, and queues the work
// among those not yet scanned.
func (w *worker) readMore(ctx context.Context) (int, error) {
	tail, _, err := w.d.streams.CurrentTail(ctx, w.streamID)
	if err != nil {
		if errors.Is(err, streamdb.ErrNotFound) {
			return 0, ErrEntityEnded
		}
		return 0, err
	}
	if tail.Seq <= w.read.Seq {
		return 0, nil
	}
	msgs, err := w.d.streams.Read(ctx, w.meta, w.read, tail)
	if err != nil {
		return 0, err
	}
	var fresh []streamdb.Message
	for _, m := range msgs {
		if w.state != nil {
			w.state.Apply(m.End.Seq, m.Data)
		}
		if m.End.Seq > w.scanned {
			fresh = append(fresh, m)
		}
	}
	if len(msgs) > 0 {
		w.read = msgs[len(msgs)-1].End
	}
	items, trailing := scan(w.scanner, fresh)
	if len(items) > 0 {
		items[0].held = append(w.trailing, items[0].held...)
		w.trailing = nil
	}
	w.queue = append(w.queue, items...)
	w.trailing = append(w.trailing, trailing...)
	return len(msgs), nil
}

// deliver runs the handler for it and acknowledges or records the failure.
func (w *worker) deliver(ctx context.Context, it *item) error {
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.d.opts.HandlerTimeout)
	defer cancel()
	steer := make(chan wire.InboxWake)
	feeder := w.startSteerFeeder(runCtx, steer)
	job := &Job{EntityURL: w.url, EntityType: w.typ, Wake: it.wake, Seq: it.seq, Attempt: w.attempts + 1, Steer: steer,
		State: func() (*wire.State, error) { return w.materialize(runCtx) }}
	started := time.Now()
	eff, runErr := w.runHandler(runCtx, job)
	metrics.HandlerDuration.WithLabelValues(w.typ).Observe(time.Since(started).Seconds())
	result := "ok"
	if runErr != nil {
		result = "error"
	}
	metrics.HandlerRuns.WithLabelValues(w.typ, result).Inc()
	consumedNow := feeder.stop()

	ackCtx := context.WithoutCancel(ctx)
	if runErr != nil {
		// Nothing the failed run did is kept, so the steer messages it was handed were not
		// handled: the retry is handed them again (or they become wakes of their own).
		return w.fail(ackCtx, it, runErr, pruneConsumed(w.consumed, it.seq))
	}
	eff = markProcessed(eff, it.wake)
	for _, seq := range consumedNow {
		w.scanner.Consume(seq)
	}
	consumed := pruneConsumed(append(w.consumed, consumedNow...), it.seq)
	sig, isSignal := it.wake.(wire.SignalWake)
	// w.status was read when the entity was claimed: a SIGTERM that came later made it
	// stopping since. finishStop stops only an entity that is stopping.
	p := progress{scanned: it.seq, consumed: consumed, held: it.held,
		stop: isSignal && sig.Signal == "SIGTERM"}
	if err := w.d.acknowledge(ackCtx, w.fence, eff, p); err != nil {
		if dberr.Refused(err) {
			// A value the run wrote cannot be stored: retrying the same run would fail
			// the same way for ever. It is a failed attempt like a handler error.
			return w.fail(ackCtx, it, errRefusedWrites{err}, pruneConsumed(w.consumed, it.seq))
		}
		return err
	}
	if w.state != nil {
		for _, ev := range eff.Events() {
			w.state.Apply(0, ev) // the next run sees this run's writes before they are read back
		}
	}
	w.scanned, w.attempts, w.retryAt, w.consumed = it.seq, 0, time.Time{}, consumed
	w.queue = w.queue[1:]
	w.skipConsumed()
	if isSignal {
		w.applySignal(sig, p.stop)
	}
	return nil
}

// runHandler calls the runner, turning a panic into an error.
func (w *worker) runHandler(ctx context.Context, job *Job) (eff Effects, err error) {
	defer func() {
		if v := recover(); v != nil {
			w.log.Error("handler panicked", zap.Any("panic", v), zap.ByteString("stack", debug.Stack()))
			eff, err = nil, fmt.Errorf("handler panicked: %v", v)
		}
	}()
	eff, err = w.d.runner.Run(ctx, job)
	if err == nil && eff == nil {
		err = errors.New("handler runner returned no effects")
	}
	return eff, err
}

// fail records a failed run: retry later, or give up on this unit of work.
func (w *worker) fail(ctx context.Context, it *item, runErr error, consumed []int64) error {
	attempt := w.attempts + 1
	fl := failure{it: it, err: runErr, attempt: attempt, max: w.d.opts.MaxAttempts}
	if attempt >= w.d.opts.MaxAttempts {
		fl.giveUp = true
		fl.progress = progress{scanned: it.seq, consumed: consumed, held: it.held}
	} else {
		fl.retryAt = w.d.clock.Now().Add(w.d.backoff(attempt))
	}
	w.log.Warn("handler failed", zap.String("wake", it.wake.Kind()), zap.String("key", it.key),
		zap.Int("attempt", attempt), zap.Bool("giving_up", fl.giveUp), zap.Error(runErr))
	if err := w.d.recordFailure(ctx, w.fence, fl); err != nil {
		return err
	}
	if fl.giveUp {
		metrics.WakesFailed.WithLabelValues(w.typ).Inc()
		w.scanned, w.attempts, w.retryAt, w.consumed = it.seq, 0, time.Time{}, consumed
		w.queue = w.queue[1:]
		return nil
	}
	w.attempts, w.retryAt = attempt, fl.retryAt
	return nil
}

// applySignal follows the entity's status through the signal it was just woken by, with
// the status machine the signal itself went through (stopped: this acknowledgement
// finished a graceful stop).
func (w *worker) applySignal(sig wire.SignalWake, stopped bool) {
	if stopped {
		w.status = entity.StatusStopped
		return
	}
	w.status, _ = w.status.Next(sig.Signal, true)
}

// skipConsumed drops queued steer messages that a running handler already received.
func (w *worker) skipConsumed() {
	for len(w.queue) > 0 {
		if _, ok := w.queue[0].wake.(wire.InboxWake); !ok || !w.scanner.Consumed(w.queue[0].seq) {
			return
		}
		w.queue = w.queue[1:]
	}
}

func pruneConsumed(seqs []int64, scanned int64) []int64 {
	out := seqs[:0:0]
	for _, s := range seqs {
		if s > scanned {
			out = append(out, s)
		}
	}
	return out
}

// finish lets go of the entity: it records how far the stream was scanned (so the
// sweep does not pick it up for nothing) and releases the claim. It reports whether work
// arrived meanwhile, in which case the entity must be claimed again.
func (w *worker) finish(ctx context.Context) bool {
	if len(w.queue) == 0 && w.read.Seq > w.scanned {
		p := progress{scanned: w.read.Seq, consumed: pruneConsumed(w.consumed, w.read.Seq), held: w.trailing}
		if err := w.d.skip(ctx, w.fence, p); err != nil {
			if !errors.Is(err, ErrFenced) && !errors.Is(err, ErrEntityEnded) && ctx.Err() == nil {
				w.d.warn(&w.d.logs.progress, "could not record scan progress", zap.String("entity", w.url), zap.Error(err))
			}
			if errors.Is(err, ErrFenced) {
				return false
			}
		} else {
			w.scanned = w.read.Seq
		}
	}
	if err := release(ctx, w.d.pool, w.d.holder, w.url, w.fence.epoch); err != nil && ctx.Err() == nil {
		w.d.warn(&w.d.logs.release, "could not release entity", zap.String("entity", w.url), zap.Error(err))
		return false
	}
	if !w.status.Deliverable() {
		return false
	}
	tail, closed, err := w.d.streams.CurrentTail(ctx, w.streamID)
	return err == nil && !closed && tail.Seq > w.read.Seq
}

func (w *worker) releaseQuietly(ctx context.Context) {
	_ = release(context.WithoutCancel(ctx), w.d.pool, w.d.holder, w.url, w.fence.epoch)
}

// steerFeeder hands steer-mode messages that arrive while a handler runs to that
// handler. A message counts as consumed once the handler received it; the scan skips it
// later.
type steerFeeder struct {
	cancel   context.CancelFunc
	done     chan struct{}
	consumed []int64
}

func (w *worker) startSteerFeeder(ctx context.Context, out chan<- wire.InboxWake) *steerFeeder {
	ctx, cancel := context.WithCancel(ctx)
	f := &steerFeeder{cancel: cancel, done: make(chan struct{})}
	from := w.read
	go func() {
		defer close(f.done)
		for {
			res, err := w.d.streams.Wait(ctx, w.meta, from)
			if err != nil {
				return
			}
			msgs, err := w.d.streams.Read(ctx, w.meta, from, res.Tail)
			if err != nil || len(msgs) == 0 {
				return
			}
			for _, m := range msgs {
				from = m.End
				var ev wire.StreamEvent
				if json.Unmarshal(m.Data, &ev) != nil || ev.Type != "inbox" || ev.Headers.Operation != "insert" ||
					modeOf(ev.Value) != "steer" || w.scanner.Consumed(m.End.Seq) {
					continue
				}
				select {
				case out <- steerWake(ev.Key, ev.Value, m.End):
					f.consumed = append(f.consumed, m.End.Seq)
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return f
}

func (f *steerFeeder) stop() []int64 {
	f.cancel()
	<-f.done
	return f.consumed
}
