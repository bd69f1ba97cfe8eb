package livefeed

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/ratelog"
)

// Prefix is where the feed is mounted.
const Prefix = "/_electric/feed"

// Options bound the feed. Zero values take the defaults.
type Options struct {
	// MaxSessionsPerPrincipal bounds the sessions one principal holds open (32; 429
	// beyond).
	MaxSessionsPerPrincipal int
	// MaxRequestsPerSession bounds a session's reads in flight (256; 429 beyond).
	MaxRequestsPerSession int
	// QueueEvents is how many events a session holds for its reader before the reads
	// writing them wait (256).
	QueueEvents int
	// WriteTimeout bounds one write of the session's response (30 s): a reader that
	// stops reading ends the session.
	WriteTimeout time.Duration
	// Heartbeat is the interval of the comment that keeps an idle session alive (15 s).
	Heartbeat time.Duration
	// Live closes when the server shuts down; every session ends then.
	Live <-chan struct{}
	// Logger logs session opens and closes (debug) and refusals (rate-limited).
	Logger *zap.Logger
}

func (o *Options) setDefaults() {
	if o.MaxSessionsPerPrincipal <= 0 {
		o.MaxSessionsPerPrincipal = 32
	}
	if o.MaxRequestsPerSession <= 0 {
		o.MaxRequestsPerSession = 256
	}
	if o.QueueEvents <= 0 {
		o.QueueEvents = 256
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 30 * time.Second
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = 15 * time.Second
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
}

// Service holds the open sessions.
type Service struct {
	opts Options
	log  *zap.Logger
	root func() http.Handler
	once sync.Once
	h    http.Handler

	mu       sync.Mutex
	sessions map[string]*session
	owned    map[string]int // sessions by principal

	refusals ratelog.Limiter
}

// New returns a Service whose reads run through the handler root returns. It is called
// once, on the first read: the feed is part of the handler it runs reads through, so
// the handler is bound late.
func New(root func() http.Handler, opts Options) *Service {
	opts.setDefaults()
	return &Service{opts: opts, log: opts.Logger.Named("feed"), root: root,
		sessions: map[string]*session{}, owned: map[string]int{}}
}

func (s *Service) handler() http.Handler {
	s.once.Do(func() { s.h = s.root() })
	return s.h
}

// Routes mounts the feed (package api's MountRoutes): its routes get the API's
// middleware, and the caller is authenticated before they run.
func (s *Service) Routes(r chi.Router, wrap func(httpx.HandlerFunc) http.HandlerFunc) {
	r.Get("/", wrap(s.open))
	r.Post("/{session}/requests", wrap(s.request))
	r.Delete("/{session}/requests/{id}", wrap(s.cancel))
}

// Sessions is how many sessions are open.
func (s *Service) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// live is a context cancelled when either ctx ends or the server shuts down.
func (s *Service) live(ctx context.Context) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancel(context.Background())
	stop1 := context.AfterFunc(ctx, cancel)
	done := make(chan struct{})
	go func() {
		select {
		case <-s.opts.Live:
			cancel()
		case <-out.Done():
		}
		close(done)
	}()
	return out, func() {
		stop1()
		cancel()
		<-done
	}
}

// Reads is how many reads are in flight over all sessions.
func (s *Service) Reads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ss := range s.sessions {
		ss.mu.Lock()
		n += len(ss.reqs)
		ss.mu.Unlock()
	}
	return n
}
