package streamdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/clock"
	"github.com/entityd/entityd/internal/lifecycle"
	"github.com/entityd/entityd/internal/ratelog"
)

// Options tune a Store. Zero values take the defaults.
type Options struct {
	// Lanes is the number of group-commit lanes (concurrent append transactions).
	Lanes int
	// MaxBatch caps the appends one transaction carries.
	MaxBatch int
	// MaxReadBytes caps the bytes of one catch-up read (at least one message is returned).
	MaxReadBytes int
	// NotifyChannel is the Postgres channel used to tell other processes about commits.
	NotifyChannel string
	// SweepInterval is how often expired streams are deleted (0: 30s, <0: never).
	SweepInterval time.Duration
	// Clock is the time of the store and of every service built on it (nil: the wall
	// clock). A test sets a clock.Test to move expiry, leases and timers by hand.
	Clock  clock.Clock
	Logger *zap.Logger
}

func (o *Options) setDefaults() {
	if o.Lanes <= 0 {
		o.Lanes = 2
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 512
	}
	if o.MaxReadBytes <= 0 {
		o.MaxReadBytes = 1 << 20
	}
	if o.NotifyChannel == "" {
		o.NotifyChannel = "entityd_streams"
	}
	if o.SweepInterval == 0 {
		o.SweepInterval = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	o.Clock = clock.Or(o.Clock)
}

// Store is the Postgres-backed stream store. It is safe for concurrent use.
type Store struct {
	pool   *pgxpool.Pool
	opts   Options
	log    *zap.Logger
	clock  clock.Clock
	procID string

	notifier *notifier
	obs      observers
	peers    peers
	lanes    []*lane
	reads    flightGroup
	idents   identities
	failLog  ratelog.Limiter // commit failures: one line per interval during an outage

	runCtx  context.Context // the background work's; Close cancels it
	stop    context.CancelFunc
	wg      sync.WaitGroup
	closeMu sync.Once
	closing sync.RWMutex
	closed  bool
}

// New returns a Store on pool. It starts nothing: Start runs its commit lanes, the LISTEN
// loop that hears other processes' commits, the peer check and the expiry sweeper; Close
// (or Stop) ends them. Appends wait in their lane until Start.
func New(pool *pgxpool.Pool, opts Options) *Store {
	opts.setDefaults()
	var id [6]byte
	_, _ = rand.Read(id[:])
	runCtx, cancel := context.WithCancel(context.Background())
	s := &Store{
		pool:     pool,
		opts:     opts,
		log:      opts.Logger.Named("streamdb"),
		clock:    opts.Clock,
		procID:   hex.EncodeToString(id[:]),
		notifier: newNotifier(),
		runCtx:   runCtx,
		stop:     cancel,
	}
	for i := 0; i < opts.Lanes; i++ {
		s.lanes = append(s.lanes, &lane{store: s, ch: make(chan *pending, opts.MaxBatch*4)})
	}
	return s
}

// Start starts the store's background work; a lifecycle.Service, so the server's group
// starts it first and stops it last.
func (s *Store) Start(context.Context) error {
	runCtx := s.runCtx
	for _, l := range s.lanes {
		s.wg.Add(1)
		// Not cancelled by Close: a lane drains its queue after Close, so appends already
		// queued are committed rather than failed (appendTx bounds each transaction).
		go func() { defer s.wg.Done(); l.run(context.WithoutCancel(runCtx)) }()
	}
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.listen(runCtx) }()
	(&lifecycle.Every{Interval: peerPoll, Clock: s.clock, Run: s.checkPeers}).Go(runCtx, &s.wg)
	if s.opts.SweepInterval > 0 {
		(&lifecycle.Every{Interval: s.opts.SweepInterval, Clock: s.clock, Run: s.sweepRound}).Go(runCtx, &s.wg)
	}
	return nil
}

// Stop is Close, for the lifecycle group.
func (s *Store) Stop(context.Context) { s.Close() }

// Open is New then Start, for tools and tests that run a store on its own.
func Open(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Store, error) {
	s := New(pool, opts)
	return s, s.Start(ctx)
}

// Close stops the background work. Appends in flight are finished first.
func (s *Store) Close() {
	s.closeMu.Do(func() {
		s.closing.Lock()
		s.closed = true
		for _, l := range s.lanes {
			close(l.ch)
		}
		s.closing.Unlock()
		s.stop()
		s.wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.unregisterListener(ctx)
	})
}

// DB is what a package that owns tables of its own gets to run its SQL on the shared
// pool: statements and transactions, nothing of pool management (no Close, no Config).
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	// SendBatch sends several statements in one round trip (each its own transaction).
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	Begin(ctx context.Context) (pgx.Tx, error)
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
	Ping(ctx context.Context) error
}

// Clock is the time the store decides expiry with; services built on the store keep
// time with it too, so one clock.Test moves a whole server.
func (s *Store) Clock() clock.Clock { return s.clock }

// DB is the executor for the tables other packages own (see migrations.Owners).
func (s *Store) DB() DB { return s.pool }

// MaxReadBytes is what one Read returns at most, unless its first message alone is
// larger (callers that budget memory estimate a read with it).
func (s *Store) MaxReadBytes() int { return s.opts.MaxReadBytes }

// Watched returns the number of streams that currently have parked readers.
func (s *Store) Watched() int { return s.notifier.watched() }
