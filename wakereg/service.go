package wakereg

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/lifecycle"
	"github.com/entityd/entityd/internal/ratelog"
	"github.com/entityd/entityd/streamdb"
)

// Options tune the evaluator; zero values take the defaults.
type Options struct {
	// Workers evaluate different sources at once (default 4).
	Workers int
	// Sweep is how often the registrations' sources are reloaded and sources with work
	// nobody took are looked for (default 1s).
	Sweep  time.Duration
	Logger *zap.Logger
}

// Service keeps the registrations and evaluates their sources.
type Service struct {
	store    *streamdb.Store
	db       streamdb.DB
	entities EntityInfo
	opts     Options
	log      *zap.Logger
	failures ratelog.Limiter

	mu      sync.Mutex
	sources map[string]bool  // source streams with registrations, as this process knows them
	byID    map[int64]string // their stream ids (for commits other processes announce)
	flights map[string]*flight
	ready   []string
	wakeup  chan struct{}
	timers  map[string]*time.Timer

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// flight is a source queued or being evaluated.
type flight struct {
	running, again bool
	gen            uint64 // bumped by Noted: a registration may have come since
}

// New returns the service; Start starts its workers and sweep. It hears every commit of
// the store from the moment it is made.
func New(store *streamdb.Store, entities EntityInfo, opts Options) *Service {
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.Sweep <= 0 {
		opts.Sweep = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	s := &Service{store: store, db: store.DB(), entities: entities, opts: opts, log: opts.Logger.Named("wakereg"),
		sources: map[string]bool{}, byID: map[int64]string{}, flights: map[string]*flight{},
		wakeup: make(chan struct{}, 1), timers: map[string]*time.Timer{}}
	store.OnCommit(s.onCommit)
	return s
}

// Start loads the sources and starts the workers and the sweep.
func (s *Service) Start(ctx context.Context) error {
	if err := s.reload(ctx); err != nil {
		return err
	}
	ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	for range s.opts.Workers {
		s.wg.Add(1)
		go s.work(ctx)
	}
	// the wall clock: timeouts and debounces are not on the store's clock yet (armLocked)
	(&lifecycle.Every{Interval: s.opts.Sweep, Run: s.reloadAndSweep}).Go(ctx, &s.wg)
	return nil
}

// Stop stops the workers and the sweep (an evaluation in progress finishes or rolls back).
func (s *Service) Stop(context.Context) {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.wg.Wait()
	s.mu.Lock()
	for _, t := range s.timers {
		t.Stop()
	}
	s.mu.Unlock()
}

// Noted tells the service that registrations on these source streams were committed
// (by this process): their sources are watched from now on and evaluated at once (which
// also arms their timeouts).
func (s *Service) Noted(ctx context.Context, streams ...string) {
	for _, stream := range streams {
		id, err := s.store.Identify(ctx, stream)
		s.mu.Lock()
		s.sources[stream] = true
		if err == nil {
			s.byID[id.ID] = stream
		}
		f := s.flights[stream]
		if f != nil {
			f.gen++
		}
		s.enqueueLocked(stream)
		s.mu.Unlock()
	}
}

// onCommit hears every commit (this process's, and others' through NOTIFY) and queues
// the sources among the changed streams. It runs on the committing goroutine: map
// lookups only.
func (s *Service) onCommit(changes []streamdb.Change) {
	if changes == nil { // changes may have been missed: look for work
		s.mu.Lock()
		for stream := range s.sources {
			s.enqueueLocked(stream)
		}
		s.mu.Unlock()
		return
	}
	s.mu.Lock()
	for _, c := range changes {
		if c.Local && s.sources[c.Path] {
			s.enqueueLocked(c.Path)
		} else if stream, ok := s.byID[c.StreamID]; ok {
			s.enqueueLocked(stream)
		}
	}
	s.mu.Unlock()
}

func (s *Service) enqueueLocked(stream string) {
	f := s.flights[stream]
	if f != nil {
		f.again = true
		return
	}
	s.flights[stream] = &flight{}
	s.ready = append(s.ready, stream)
	select {
	case s.wakeup <- struct{}{}:
	default:
	}
}

func (s *Service) enqueue(stream string) {
	s.mu.Lock()
	s.enqueueLocked(stream)
	s.mu.Unlock()
}

// next takes a queued source that is not being evaluated.
func (s *Service) next() (string, *flight, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, stream := range s.ready {
		f := s.flights[stream]
		if f.running {
			continue
		}
		s.ready = append(s.ready[:i], s.ready[i+1:]...)
		f.running, f.again = true, false
		if len(s.ready) > 0 { // pass the wake-up on to another worker
			select {
			case s.wakeup <- struct{}{}:
			default:
			}
		}
		return stream, f, true
	}
	return "", nil, false
}

func (s *Service) work(ctx context.Context) {
	defer s.wg.Done()
	for {
		stream, f, ok := s.next()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-s.wakeup:
				continue
			}
		}
		s.mu.Lock()
		gen := f.gen
		s.mu.Unlock()
		ev, err := s.evaluate(ctx, stream)
		s.finish(ctx, stream, f, gen, ev, err)
	}
}

// finish settles a source after an evaluation: again when more is waiting, a timer for
// its next due debounce or timeout, a retry after a failure; forgotten when it has no
// registrations left.
func (s *Service) finish(ctx context.Context, stream string, f *flight, gen uint64, ev *evaluation, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f.running = false
	switch {
	case err != nil:
		if ctx.Err() == nil {
			s.failures.Log(s.log, zap.WarnLevel, "evaluate wake source", zap.String("source", stream), zap.Error(err))
			s.armLocked(stream, time.Now().Add(time.Second))
		}
	case ev != nil && len(ev.regs) == 0 && f.gen == gen:
		delete(s.sources, stream)
		for id, p := range s.byID {
			if p == stream {
				delete(s.byID, id)
			}
		}
	case ev != nil:
		if ev.more {
			f.again = true
		}
		if !ev.nextDue.IsZero() {
			s.armLocked(stream, ev.nextDue)
		}
	}
	if f.again {
		f.again = false
		s.ready = append(s.ready, stream)
		select {
		case s.wakeup <- struct{}{}:
		default:
		}
		return
	}
	delete(s.flights, stream)
}

// armLocked queues stream at when (the earliest of what is asked wins).
func (s *Service) armLocked(stream string, when time.Time) {
	d := time.Until(when)
	if t := s.timers[stream]; t != nil {
		t.Stop()
	}
	s.timers[stream] = time.AfterFunc(max(d, 0), func() {
		s.mu.Lock()
		delete(s.timers, stream)
		s.enqueueLocked(stream)
		s.mu.Unlock()
	})
}

// reloadAndSweep, every Options.Sweep, reloads the sources and queues those with work
// nobody took.
func (s *Service) reloadAndSweep(ctx context.Context) {
	if err := s.reload(ctx); err != nil && ctx.Err() == nil {
		s.failures.Log(s.log, zap.WarnLevel, "reload wake sources", zap.Error(err))
		return
	}
	if err := s.sweep(ctx); err != nil && ctx.Err() == nil {
		s.failures.Log(s.log, zap.WarnLevel, "sweep wake sources", zap.Error(err))
	}
}

// reload replaces the set of sources with the registrations' (made by any process).
func (s *Service) reload(ctx context.Context) error {
	rows, err := s.db.Query(ctx, sqlSources)
	if err != nil {
		return err
	}
	defer rows.Close()
	sources, byID := map[string]bool{}, map[int64]string{}
	for rows.Next() {
		var stream string
		var id *int64
		if err := rows.Scan(&stream, &id); err != nil {
			return err
		}
		sources[stream] = true
		if id != nil {
			byID[*id] = stream
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	// sources noted since the query began stay (their registrations committed before)
	for stream, f := range s.flights {
		if f.gen > 0 && !sources[stream] {
			sources[stream] = true
		}
	}
	s.sources, s.byID = sources, byID
	s.mu.Unlock()
	return nil
}

// sweep queues the sources with work nobody took.
func (s *Service) sweep(ctx context.Context) error {
	rows, err := s.db.Query(ctx, sqlPending)
	if err != nil {
		return err
	}
	defer rows.Close()
	var pending []string
	for rows.Next() {
		var stream string
		if err := rows.Scan(&stream); err != nil {
			return err
		}
		pending = append(pending, stream)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, stream := range pending {
		s.enqueue(stream)
	}
	return nil
}
