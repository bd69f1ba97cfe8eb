package wake

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/clock"
	"github.com/entityd/entityd/internal/lifecycle"
	"github.com/entityd/entityd/streamdb"
)

// DefaultMaxAttempts is how many times failing work is tried when Options.MaxAttempts
// is not set (the poison-message rule; remote handlers' wakes follow it too).
const DefaultMaxAttempts = 5

// Options tune delivery. Zero values take the defaults.
type Options struct {
	// Lease is how long this process's claims outlive its last heartbeat: after a crash,
	// its entities are redelivered by another process after at most about this long.
	Lease time.Duration
	// Heartbeat is how often the lease is renewed.
	Heartbeat time.Duration
	// IdleRelease lets go of an entity that had no work for this long.
	IdleRelease time.Duration
	// MaxAttempts is how many times a failing unit of work is tried before it is marked
	// failed and skipped.
	MaxAttempts int
	// BaseBackoff and MaxBackoff bound the exponential delay between attempts.
	BaseBackoff time.Duration
	MaxBackoff  time.Duration
	// HandlerTimeout cancels a handler run that takes longer (the run then fails).
	HandlerTimeout time.Duration
	// SweepInterval is how often unheld entities with pending work are looked for (work
	// left by a crashed process, or whose notification was missed).
	SweepInterval time.Duration
	Logger        *zap.Logger
}

func (o *Options) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Lease, 10*time.Second)
	def(&o.Heartbeat, 2*time.Second)
	def(&o.IdleRelease, 30*time.Second)
	def(&o.BaseBackoff, 200*time.Millisecond)
	def(&o.MaxBackoff, 30*time.Second)
	def(&o.HandlerTimeout, 5*time.Minute)
	def(&o.SweepInterval, 5*time.Second)
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
}

// Dispatcher finds work for the entities whose types this process handles, claims them
// and runs one worker per claimed entity.
type Dispatcher struct {
	opts    Options
	streams *streamdb.Store
	pool    streamdb.DB
	runner  Runner
	log     *zap.Logger
	clock   clock.Clock // the store's: leases, retry delays, idle release and timers
	holder  string
	types   []string

	mu        sync.Mutex
	claimMu   sync.Mutex // serializes claims (see claimAndStart)
	workers   map[string]*worker
	byStream  map[int64]entityRef
	notEntity map[int64]struct{}

	changes    chan []streamdb.Change
	pokes      chan entityRef
	rescan     chan struct{}
	timerPoke  chan struct{}
	heartbeats *lifecycle.Every // renews the lease
	sweeps     *lifecycle.Every // finds unheld entities with work; at once on rescan
	timers     *lifecycle.Every // fires due timers; at once on timerPoke
	logs       loopLogs

	stop    context.CancelFunc
	wg      sync.WaitGroup
	workWG  sync.WaitGroup
	started atomic.Bool
	// leaseOK is the time (unix ns) until which this process's lease is surely valid:
	// the last successful heartbeat plus three quarters of the lease.
	leaseOK atomic.Int64
}

type entityRef struct {
	url, entityType string
}

// New returns a Dispatcher that runs handlers of the given types through runner.
func New(streams *streamdb.Store, runner Runner, types []string, opts Options) *Dispatcher {
	opts.setDefaults()
	var id [8]byte
	_, _ = rand.Read(id[:])
	d := &Dispatcher{
		opts: opts, streams: streams, pool: streams.DB(), runner: runner, log: opts.Logger.Named("wake"),
		clock: streams.Clock(), holder: "h-" + hex.EncodeToString(id[:]), types: types,
		workers: map[string]*worker{}, byStream: map[int64]entityRef{}, notEntity: map[int64]struct{}{},
		changes: make(chan []streamdb.Change, 4096), pokes: make(chan entityRef, 1024),
		rescan: make(chan struct{}, 1), timerPoke: make(chan struct{}, 1),
	}
	d.heartbeats = &lifecycle.Every{Interval: opts.Heartbeat, Clock: d.clock, Run: d.renewLease}
	d.sweeps = &lifecycle.Every{Interval: opts.SweepInterval, Clock: d.clock, Wake: d.rescan, Run: d.sweep}
	d.timers = &lifecycle.Every{Interval: timerPoll, Clock: d.clock, RunAtStart: true, Wake: d.timerPoke, RunNext: d.fireTimers}
	streams.OnCommit(d.observe)
	return d
}

func (d *Dispatcher) renewedLease(sent time.Time) {
	d.leaseOK.Store(sent.Add(d.opts.Lease * 3 / 4).UnixNano())
}

// waitForLease returns when this process's lease is surely valid, so that no handler
// run starts after another process may have taken its entities over (a heartbeat that
// keeps failing — a partition, a starved pool — pauses delivery instead).
func (d *Dispatcher) waitForLease(ctx context.Context) error {
	for d.clock.Now().UnixNano() >= d.leaseOK.Load() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// Poke makes the dispatcher look at an entity now (after a change that is not a stream
// commit, such as a paused entity becoming idle).
func (d *Dispatcher) Poke(url, entityType string) {
	if !d.started.Load() || !d.runner.Handles(entityType) {
		return
	}
	// The dispatcher's loop claims it (no goroutine of the caller's, none untracked); a
	// full queue falls back to the sweep, which finds every unheld entity with work.
	select {
	case d.pokes <- entityRef{url: url, entityType: entityType}:
	default:
		d.requestRescan()
	}
}

// Holder is this process's holder id.
func (d *Dispatcher) Holder() string { return d.holder }

// Start registers this process as a holder and starts finding and delivering work.
func (d *Dispatcher) Start(ctx context.Context) error {
	if err := registerHolder(ctx, d.pool, d.holder, d.opts.Lease, d.clock.SQL()); err != nil {
		return err
	}
	d.renewedLease(d.clock.Now())
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d.stop = cancel
	d.started.Store(true)
	d.heartbeats.Go(runCtx, &d.wg)
	d.sweeps.Go(runCtx, &d.wg)
	d.timers.Go(runCtx, &d.wg)
	d.wg.Add(1)
	go func() { defer d.wg.Done(); d.loop(runCtx) }()
	d.requestRescan()
	d.log.Info("wake dispatcher started", zap.String("holder", d.holder), zap.Strings("types", d.types))
	return nil
}

// Stop stops delivering: running handlers finish (their acknowledgements commit), and
// every entity this process holds is released so that others take over at once.
func (d *Dispatcher) Stop(ctx context.Context) {
	if !d.started.Load() {
		return
	}
	d.stop()
	d.wg.Wait()
	done := make(chan struct{})
	go func() { d.workWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		// A handler is still running: keep its claim (the lease lapses on its own) rather
		// than let another process run the entity at the same time.
		d.log.Warn("handlers still running at shutdown; their entities are redelivered when the lease lapses")
		return
	}
	if err := unregisterHolder(ctx, d.pool, d.holder); err != nil {
		d.log.Warn("could not release entities at shutdown; they are redelivered when the lease lapses", zap.Error(err))
	}
}

// observe hears about every stream commit (this process's and others'); it runs on the
// committing goroutine, so it only hands the changes over.
func (d *Dispatcher) observe(changes []streamdb.Change) {
	if len(d.types) == 0 || !d.started.Load() {
		return
	}
	if changes == nil {
		d.requestRescan()
		return
	}
	select {
	case d.changes <- changes:
	default:
		d.requestRescan() // too much at once: look for work in the database instead
	}
}

// requestRescan asks for a sweep now.
func (d *Dispatcher) requestRescan() { poke(d.rescan) }

// poke is a non-blocking send on a wake-up channel of capacity one.
func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// renewLease is the heartbeat, every Options.Heartbeat.
func (d *Dispatcher) renewLease(ctx context.Context) {
	sent := d.clock.Now()
	if err := heartbeat(ctx, d.pool, d.holder, d.opts.Lease, d.clock.SQL()); err != nil {
		if ctx.Err() == nil {
			d.warn(&d.logs.heartbeat, "lease heartbeat failed; handlers wait until it succeeds", zap.Error(err))
		}
		return
	}
	d.renewedLease(sent)
}

// loop hands commits and pokes to workers, or claims their entities.
func (d *Dispatcher) loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case changes := <-d.changes:
			d.onChanges(ctx, changes)
		case ref := <-d.pokes:
			d.dispatch(ctx, []entityRef{ref})
		}
	}
}

// onChanges pokes the workers of changed entities and claims the others.
func (d *Dispatcher) onChanges(ctx context.Context, changes []streamdb.Change) {
	// take everything queued so far, to claim in one statement
	for more := true; more; {
		select {
		case c := <-d.changes:
			changes = append(changes, c...)
		default:
			more = false
		}
	}
	var unknown []int64
	var refs []entityRef
	d.mu.Lock()
	for _, c := range changes {
		if ref, ok := d.byStream[c.StreamID]; ok {
			refs = append(refs, ref)
		} else if _, no := d.notEntity[c.StreamID]; !no {
			unknown = append(unknown, c.StreamID)
		}
	}
	d.mu.Unlock()
	if len(unknown) > 0 {
		found, err := d.resolve(ctx, unknown)
		if err != nil {
			d.warn(&d.logs.resolve, "could not resolve streams to entities", zap.Error(err))
			d.requestRescan()
		}
		refs = append(refs, found...)
	}
	d.dispatch(ctx, refs)
}

// resolve maps stream ids to the entities whose main stream they are, caching the
// answer (including "not an entity's main stream").
func (d *Dispatcher) resolve(ctx context.Context, ids []int64) ([]entityRef, error) {
	rows, err := d.pool.Query(ctx, sqlResolveStreams, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	found := map[int64]entityRef{}
	for rows.Next() {
		var id int64
		var ref entityRef
		if err := rows.Scan(&id, &ref.url, &ref.entityType); err != nil {
			return nil, err
		}
		found[id] = ref
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.notEntity) > 100_000 {
		d.notEntity = map[int64]struct{}{}
	}
	if len(d.byStream) > 1_000_000 {
		d.byStream = map[int64]entityRef{}
	}
	out := make([]entityRef, 0, len(found))
	for _, id := range ids {
		if ref, ok := found[id]; ok {
			d.byStream[id] = ref
			out = append(out, ref)
		} else {
			d.notEntity[id] = struct{}{}
		}
	}
	return out, nil
}

// dispatch pokes running workers and claims entities that have none here.
func (d *Dispatcher) dispatch(ctx context.Context, refs []entityRef) {
	var claimURLs []string
	seen := map[string]bool{}
	d.mu.Lock()
	for _, ref := range refs {
		if seen[ref.url] || !d.runner.Handles(ref.entityType) {
			continue
		}
		seen[ref.url] = true
		if w := d.workers[ref.url]; w != nil {
			w.poke()
			continue
		}
		claimURLs = append(claimURLs, ref.url)
	}
	d.mu.Unlock()
	if len(claimURLs) > 0 {
		d.claimAndStart(ctx, claimURLs)
	}
}

func (d *Dispatcher) claimAndStart(ctx context.Context, urls []string) {
	// One claim at a time, and none for an entity that has a worker here: the claim would
	// succeed (we hold the entity), fence that worker while its handler may still run, and
	// start a second worker next to it — two runs of one entity at once.
	d.claimMu.Lock()
	defer d.claimMu.Unlock()
	d.mu.Lock()
	fresh := make([]string, 0, len(urls))
	for _, u := range urls {
		if w := d.workers[u]; w != nil {
			w.poke()
		} else {
			fresh = append(fresh, u)
		}
	}
	d.mu.Unlock()
	if len(fresh) == 0 {
		return
	}
	got, err := claim(ctx, d.pool, d.holder, fresh, d.clock.SQL())
	if err != nil {
		if ctx.Err() == nil {
			d.warn(&d.logs.claim, "claim failed", zap.Error(err))
		}
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range got {
		if !d.runner.Handles(c.entityType) || ctx.Err() != nil {
			_ = release(context.WithoutCancel(ctx), d.pool, d.holder, c.url, c.epoch)
			continue
		}
		w := newWorker(d, c)
		d.workers[c.url] = w
		d.byStream[c.streamID] = entityRef{url: c.url, entityType: c.entityType}
		d.workWG.Add(1)
		go func() { defer d.workWG.Done(); w.run(ctx) }()
	}
}

// workerDone forgets a finished worker; when work arrived while it was letting go,
// the entity is claimed again. Work also counts as arrived when the worker was poked after
// it last waited: pokes happen under d.mu while the worker is registered, so one that came
// too late to be seen (say, a send that un-paused the entity while its worker was
// leaving because it was paused) is still in pokeCh here, and is not lost until the sweep.
func (d *Dispatcher) workerDone(ctx context.Context, w *worker, reclaim bool) {
	d.mu.Lock()
	if d.workers[w.url] == w {
		delete(d.workers, w.url)
		select {
		case <-w.pokeCh:
			reclaim = true
		default:
		}
	}
	d.mu.Unlock()
	if reclaim && ctx.Err() == nil {
		d.claimAndStart(ctx, []string{w.url})
	}
}

// sweep claims unheld entities with pending work.
func (d *Dispatcher) sweep(ctx context.Context) {
	if len(d.types) == 0 {
		return
	}
	for ctx.Err() == nil {
		urls, err := pendingUnheld(ctx, d.pool, d.types, 500, d.clock.SQL())
		if err != nil {
			if ctx.Err() == nil {
				d.warn(&d.logs.sweep, "sweep for pending work failed", zap.Error(err))
			}
			return
		}
		d.mu.Lock()
		var fresh []string
		for _, u := range urls {
			if d.workers[u] == nil {
				fresh = append(fresh, u)
			}
		}
		d.mu.Unlock()
		if len(fresh) == 0 {
			return
		}
		before := d.workerCount()
		d.claimAndStart(ctx, fresh)
		if d.workerCount() == before || len(urls) < 500 {
			return
		}
	}
}

func (d *Dispatcher) workerCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.workers)
}

// Held returns the entities this process currently holds (for the API and tests).
func (d *Dispatcher) Held() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.workers))
	for u := range d.workers {
		out = append(out, u)
	}
	return out
}

// backoff is the delay before attempt n+1 after n failures.
func (d *Dispatcher) backoff(failures int) time.Duration {
	b := d.opts.BaseBackoff
	for i := 1; i < failures && b < d.opts.MaxBackoff; i++ {
		b *= 2
	}
	if b > d.opts.MaxBackoff {
		b = d.opts.MaxBackoff
	}
	return b
}
