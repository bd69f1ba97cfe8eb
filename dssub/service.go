package dssub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/entityd/entityd/internal/clock"
	"github.com/entityd/entityd/internal/coalesce"
	"github.com/entityd/entityd/internal/lifecycle"
	"github.com/entityd/entityd/internal/outbound"
	"github.com/entityd/entityd/streamdb"
)

// streamRoot is where subscribable streams live (every stream: plain root streams and
// entity streams alike); subscription paths are relative to it.
const streamRoot = "/"

// Options tune the service. Zero values take the defaults.
type Options struct {
	// PublicURL is the server's externally reachable origin (e.g. https://streams.example.com):
	// callback and JWKS URLs are built from it. Empty: from the request that created the
	// subscription (its Host header and scheme).
	PublicURL string
	// Outbound is which addresses webhook URLs may reach (the zero policy: https to
	// public hosts, or http to the local machine).
	Outbound outbound.Policy
	// OpaqueErrors keeps the reason a webhook delivery failed out of the subscription's
	// visible status (it is logged): a caller must not learn which local ports listen.
	OpaqueErrors bool
	// MaxPerPrincipal bounds the subscriptions one principal creates through the API
	// (0: no bound; the server's own principals are exempt).
	MaxPerPrincipal int
	// PollInterval is how often a process looks for subscriptions whose retry, attempt or
	// lease is due and for subscription changes made by other processes (default 500ms).
	PollInterval time.Duration
	// ReconcileInterval is how often the database is searched for work whose
	// notification was lost, e.g. to a crash right after a commit (default 30s).
	ReconcileInterval time.Duration
	// DeliveryTimeout bounds one webhook request (default 10s). A handler answers at
	// once and finishes through callbacks; a target that keeps the request open holds a
	// slot until then.
	DeliveryTimeout time.Duration
	// RetryBase and RetryMax bound the exponential delay between webhook attempts
	// (default 1s and 60s; ±20% jitter).
	RetryBase, RetryMax time.Duration
	// MaxDeliveries caps concurrent webhook requests of this process (default 64).
	MaxDeliveries int
	// MaxDeliveriesPerTarget caps concurrent webhook requests to one target, a webhook
	// URL's origin (default 8): a target that never answers holds these, not the
	// process's MaxDeliveries (see targets.go).
	MaxDeliveriesPerTarget int
	// MaxQueuedPerTarget caps the deliveries waiting for a slot of one target (default
	// 1024); one more is retried later with backoff.
	MaxQueuedPerTarget int
	// MaxDeliveryWait is the longest a delivery may take to start its request: to
	// enrich the wake and wait for its slots (default DeliveryTimeout); then it is
	// retried later with backoff. A webhook attempt's window is MaxDeliveryWait +
	// DeliveryTimeout + 5s: a process that dies mid-attempt holds the wake that long.
	MaxDeliveryWait time.Duration
	// Workers is the number of goroutines that advance subscriptions (default 4).
	Workers int
	// Enrich, when set, adds members to webhook wake bodies (see Enricher).
	Enrich Enricher
	// WakeEnded, when set, runs in the transaction that ends a wake that its handler
	// finished (a done callback or ack, a webhook's {"done":true}) or that was given up
	// on, with the wake's primary stream ("/<path>"); an error fails that transaction.
	// Electric's entity status follows wakes with it (remote.Status).
	WakeEnded func(ctx context.Context, tx *streamdb.Tx, primary string) error
	// GiveUp is when a stream's work stops being retried (see GiveUpRule); its zero
	// value retries for ever, as the Durable Streams protocol does.
	GiveUp GiveUpRule
	// Clock is the time leases, retries and due work are judged by (nil: the store's,
	// which is how a server runs). A test of the service alone sets a clock.Test here.
	Clock  clock.Clock
	Logger *zap.Logger
}

func (o *Options) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.PollInterval, 500*time.Millisecond)
	def(&o.ReconcileInterval, 30*time.Second)
	def(&o.DeliveryTimeout, 10*time.Second)
	def(&o.MaxDeliveryWait, o.DeliveryTimeout)
	def(&o.RetryBase, time.Second)
	def(&o.RetryMax, time.Minute)
	if o.MaxDeliveries <= 0 {
		o.MaxDeliveries = 64
	}
	if o.MaxDeliveriesPerTarget <= 0 {
		o.MaxDeliveriesPerTarget = 8
	}
	if o.MaxQueuedPerTarget <= 0 {
		o.MaxQueuedPerTarget = 1024
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	o.PublicURL = strings.TrimRight(o.PublicURL, "/")
}

// Service runs Durable Streams subscriptions: it serves their HTTP API (Handler), matches
// stream commits against them, and delivers their wakes.
type Service struct {
	opts   Options
	store  *streamdb.Store
	pool   streamdb.DB
	log    *zap.Logger
	clock  clock.Clock // the store's: leases, retries and what is due
	procID string

	keys    atomic.Pointer[keyring]
	matcher atomic.Pointer[matcher]
	reload  sync.Mutex // serializes matcher reloads
	recent  *recent

	mu      sync.Mutex
	dirty   map[linkKey]dirtyLink // pattern/explicit matches of commits, not yet processed
	known   map[linkKey]int64     // pattern links known to exist (stream id), to skip upserts
	evalSet map[string]bool       // subscriptions queued for evaluation
	evalQ   []string

	dirtySig        chan struct{}
	evalSig         chan struct{}
	reconcileSig    chan struct{} // wakes the poll loop when a reconciliation is wanted
	reconcileWanted atomic.Bool
	deliveries      chan struct{} // the process's delivery slots (a semaphore)
	targets         *targetSlots  // each target's delivery slots, taken first (targets.go)

	clients *outbound.Clients // webhook requests go only where outbound's rules allow

	// statements shared by many wakes: claims' write tokens, webhooks' 2xx answers and
	// the write-token checks of handlers' writes; and one transaction ends the wakes of
	// many done callbacks (endWakes). Evaluations are batched by the queue (dequeue).
	claims      *coalesce.Coalescer[tokenClaim, bool]
	accepts     *coalesce.Coalescer[acceptedWake, struct{}]
	tokenChecks *coalesce.Coalescer[tokenCheck, bool]
	dones       *coalesce.Coalescer[doneRequest, doneAnswer]

	started atomic.Bool
	logs    loopLogs
	stop    context.CancelFunc
	wg      sync.WaitGroup

	// webhook requests: started while running, cancelled only when Stop's grace ends;
	// those still waiting for a slot are handed back as Stop begins (waitCtx)
	launchMu         sync.Mutex
	running          bool
	deliverCtx       context.Context
	cancelDeliveries context.CancelFunc
	waitCtx          context.Context
	stopWaiting      context.CancelFunc
	deliverW         sync.WaitGroup
}

type linkKey struct{ sub, path string }

type dirtyLink struct {
	streamID  int64
	byPattern bool
}

// New returns a Service on store. Start it before serving its Handler.
func New(store *streamdb.Store, opts Options) *Service {
	opts.setDefaults()
	if opts.Clock == nil {
		opts.Clock = store.Clock()
	}
	var id [6]byte
	_, _ = rand.Read(id[:])
	s := &Service{
		opts: opts, store: store, pool: store.DB(), log: opts.Logger.Named("dssub"), clock: opts.Clock,
		procID:   "p-" + hex.EncodeToString(id[:]),
		recent:   newRecent(8192, 10*time.Second),
		dirty:    map[linkKey]dirtyLink{},
		known:    map[linkKey]int64{},
		evalSet:  map[string]bool{},
		dirtySig: make(chan struct{}, 1), evalSig: make(chan struct{}, 1), reconcileSig: make(chan struct{}, 1),
		deliveries: make(chan struct{}, opts.MaxDeliveries),
		targets:    newTargetSlots(opts.MaxDeliveriesPerTarget, opts.MaxQueuedPerTarget),
	}
	s.matcher.Store(emptyMatcher())
	s.clients = outbound.NewPolicyClients(opts.Outbound)
	s.claims = coalesce.New(256, s.storeTokens)
	s.accepts = coalesce.New(256, s.recordAccepted)
	s.tokenChecks = coalesce.New(256, s.checkTokens)
	s.dones = coalesce.New(128, s.endWakes)
	store.OnCommit(s.observe)
	return s
}

// Start loads the keys and subscriptions and starts matching and delivering.
func (s *Service) Start(ctx context.Context) error {
	kr, err := loadKeys(ctx, s.pool)
	if err != nil {
		return err
	}
	s.keys.Store(kr)
	m, err := loadMatcher(ctx, s.pool)
	if err != nil {
		return err
	}
	s.matcher.Store(m)
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stop = stop
	s.launchMu.Lock()
	s.deliverCtx, s.cancelDeliveries = context.WithCancel(context.WithoutCancel(ctx))
	s.waitCtx, s.stopWaiting = context.WithCancel(s.deliverCtx)
	s.running = true
	s.launchMu.Unlock()
	s.started.Store(true)
	s.pollLoop().Go(runCtx, &s.wg)
	s.wg.Add(1 + s.opts.Workers)
	go func() { defer s.wg.Done(); s.linkLoop(runCtx) }()
	for i := 0; i < s.opts.Workers; i++ {
		go func() { defer s.wg.Done(); s.evalLoop(runCtx) }()
	}
	s.requestReconcile() // work left behind by a crash or by a stop
	s.log.Info("subscriptions started", zap.String("process", s.procID), zap.String("signing_kid", kr.signKID))
	return nil
}

// Stop stops matching and delivering. Webhook requests in flight are abandoned when ctx
// ends; their wakes are handed back so that any process retries them at once.
func (s *Service) Stop(ctx context.Context) {
	if !s.started.Swap(false) {
		return
	}
	s.stop()
	s.wg.Wait()
	s.launchMu.Lock()
	s.running = false
	s.launchMu.Unlock()
	s.stopWaiting() // a delivery that has not started is another process's to make, now
	done := make(chan struct{})
	go func() { s.deliverW.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.log.Warn("webhook deliveries still running at shutdown; they are handed back for a retry")
		s.cancelDeliveries()
		<-done
	}
	s.cancelDeliveries()
}

// observe hears about every commit; it runs on the committing goroutine, so it only
// matches in memory and hands the matches to linkLoop. Commits of other processes are
// theirs to match (Change has no path for them); a nil slice means notifications may
// have been lost, which the reconciliation makes up for.
func (s *Service) observe(changes []streamdb.Change) {
	if !s.started.Load() {
		return
	}
	if changes == nil {
		s.requestReconcile()
		return
	}
	m := s.matcher.Load()
	now := time.Now()
	added := false
	for _, c := range changes {
		if !c.Local || !strings.HasPrefix(c.Path, streamRoot) {
			continue
		}
		rel := c.Path[len(streamRoot):]
		if rel == "" || reservedPath(rel) {
			continue
		}
		s.recent.add(rel, c.StreamID, now)
		m.match(rel, func(subID string, byPattern bool) {
			s.markDirty(linkKey{subID, rel}, dirtyLink{streamID: c.StreamID, byPattern: byPattern})
			added = true
		})
	}
	if added {
		signal(s.dirtySig)
	}
}

func (s *Service) markDirty(k linkKey, d dirtyLink) {
	s.mu.Lock()
	if old, ok := s.dirty[k]; ok && old.byPattern {
		d.byPattern = true
	}
	s.dirty[k] = d
	s.mu.Unlock()
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (s *Service) requestReconcile() {
	s.reconcileWanted.Store(true)
	signal(s.reconcileSig)
}

// enqueue asks a worker to evaluate subscription id (start a wake, retry, expire a lease).
func (s *Service) enqueue(ids ...string) {
	s.mu.Lock()
	for _, id := range ids {
		if !s.evalSet[id] {
			s.evalSet[id] = true
			s.evalQ = append(s.evalQ, id)
		}
	}
	s.mu.Unlock()
	signal(s.evalSig)
}

// evalBatch is the most subscriptions one evaluation takes from the queue.
const evalBatch = 64

// dequeue takes up to evalBatch subscriptions to evaluate.
func (s *Service) dequeue() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := min(len(s.evalQ), evalBatch)
	if n == 0 {
		return nil
	}
	ids := make([]string, n)
	copy(ids, s.evalQ)
	s.evalQ = s.evalQ[n:]
	for _, id := range ids {
		delete(s.evalSet, id)
	}
	if len(s.evalQ) > 0 {
		signal(s.evalSig) // keep the other workers going
	}
	return ids
}

func (s *Service) evalLoop(ctx context.Context) {
	for {
		ids := s.dequeue()
		if len(ids) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-s.evalSig:
				continue
			}
		}
		if err := s.evaluate(ctx, ids); err != nil && ctx.Err() == nil {
			s.logs.evaluate.Log(s.log, zapcore.WarnLevel, "could not advance subscriptions; the reconciliation retries",
				zap.String("subscription", ids[0]), zap.Int("subscriptions", len(ids)), zap.Error(err))
			s.requestReconcile()
		}
	}
}

// linkLoop links streams newly matched by a pattern and queues their subscriptions.
func (s *Service) linkLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.dirtySig:
		}
		s.mu.Lock()
		batch := s.dirty
		s.dirty = map[linkKey]dirtyLink{}
		s.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		if err := s.linkMatches(ctx, batch); err != nil && ctx.Err() == nil {
			s.logs.link.Log(s.log, zapcore.WarnLevel, "could not link matched streams; the reconciliation retries", zap.Error(err))
			s.requestReconcile()
		}
		seen := map[string]bool{}
		var ids []string
		for k := range batch {
			if !seen[k.sub] {
				seen[k.sub] = true
				ids = append(ids, k.sub)
			}
		}
		s.enqueue(ids...)
	}
}

// linkMatches creates the pattern links of a batch of matches (at "-1": everything in a
// stream that starts matching after the subscription exists is pending).
func (s *Service) linkMatches(ctx context.Context, batch map[linkKey]dirtyLink) error {
	var subs, paths []string
	var ids []int64
	s.mu.Lock()
	for k, d := range batch {
		if d.byPattern && s.known[k] != d.streamID {
			subs, paths, ids = append(subs, k.sub), append(paths, k.path), append(ids, d.streamID)
		}
	}
	s.mu.Unlock()
	if len(subs) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, sqlLinkMatchedStreams,
		subs, paths, ids)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23503" {
		return nil // a subscription was deleted meanwhile; its links went with it
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	if len(s.known) > 100_000 {
		s.known = map[linkKey]int64{}
	}
	for i := range subs {
		s.known[linkKey{subs[i], paths[i]}] = ids[i]
	}
	s.mu.Unlock()
	return nil
}

// pollLoop picks up what is due (retries, lapsed attempts and leases, reconciled work)
// and subscription changes made by other processes every PollInterval of the store's
// clock, and runs the reconciliation every ReconcileInterval and when requested.
func (s *Service) pollLoop() *lifecycle.Every {
	next := s.clock.Now().Add(s.opts.ReconcileInterval)
	// Requested reconciliations (after an error or a lost notification) run at most once
	// a second of the wall clock, so that a database that keeps failing is not hammered.
	var last time.Time
	reconcile := func(ctx context.Context) {
		s.reconcileWanted.Store(false)
		last, next = time.Now(), s.clock.Now().Add(s.opts.ReconcileInterval)
		if err := s.reconcile(ctx); err != nil && ctx.Err() == nil {
			s.logs.reconcile.Log(s.log, zapcore.WarnLevel, "subscription reconciliation failed", zap.Error(err))
		}
	}
	round := func(ctx context.Context) {
		if err := s.poll(ctx); err != nil && ctx.Err() == nil {
			s.logs.poll.Log(s.log, zapcore.WarnLevel, "subscription poll failed", zap.Error(err))
		}
		if !s.clock.Now().Before(next) || (s.reconcileWanted.Load() && time.Since(last) >= time.Second) {
			reconcile(ctx)
		}
	}
	return &lifecycle.Every{Interval: s.opts.PollInterval, Clock: s.clock, Wake: s.reconcileSig, Run: round}
}

func (s *Service) poll(ctx context.Context) error {
	var version int64
	if err := s.pool.QueryRow(ctx, sqlMatcherVersion).Scan(&version); err != nil {
		return err
	}
	if version != s.matcher.Load().version {
		if err := s.refresh(ctx); err != nil {
			return err
		}
	}
	rows, err := s.pool.Query(ctx, sqlDueSubscriptions, s.clock.SQL())
	if err != nil {
		return err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(ids) > 0 {
		s.enqueue(ids...)
	}
	return nil
}

// refresh installs the current subscriptions and matches this process's latest commits against what is new.
func (s *Service) refresh(ctx context.Context) error {
	s.reload.Lock()
	defer s.reload.Unlock()
	next, err := loadMatcher(ctx, s.pool)
	if err != nil {
		return err
	}
	prev := s.matcher.Load()
	if next.version == prev.version {
		return nil
	}
	s.matcher.Store(next)
	s.mu.Lock()
	s.known = map[linkKey]int64{}
	s.mu.Unlock()

	subs, explicit := freshIn(prev, next)
	if len(subs) == 0 && len(explicit) == 0 {
		return nil
	}
	added := false
	for _, c := range s.recent.since(time.Now()) {
		for _, id := range explicit[c.rel] {
			s.markDirty(linkKey{id, c.rel}, dirtyLink{streamID: c.streamID})
			added = true
		}
		var segs []string
		for _, sm := range subs {
			if sm.glob == nil || sm.wakeStream == c.rel {
				continue
			}
			if segs == nil {
				segs = splitSegments(c.rel)
			}
			if sm.glob.match(segs) {
				s.markDirty(linkKey{sm.id, c.rel}, dirtyLink{streamID: c.streamID, byPattern: true})
				added = true
			}
		}
	}
	if added {
		signal(s.dirtySig)
	}
	return nil
}
