// Package api is entityd's HTTP surface: the Electric Agents entity API under
// /_electric, and the Durable Streams protocol for /v1/stream/* and every entity stream.
// Handlers decode and check requests, call the packages that own the rules, and map their
// errors to the error envelope; they never talk SQL.
package api

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/entityd/entityd/api/dsapi"
	"github.com/entityd/entityd/authz"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/authn"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/inflight"
	"github.com/entityd/entityd/internal/lifecycle"
	"github.com/entityd/entityd/internal/metrics"
	"github.com/entityd/entityd/internal/outbound"
	"github.com/entityd/entityd/internal/quota"
	"github.com/entityd/entityd/internal/textpolicy"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wakereg"
)

// Config holds the HTTP limits and timings.
type Config struct {
	// MaxBodyBytes caps JSON request bodies of the entity API (413 beyond).
	MaxBodyBytes int64
	// MaxAppendBytes caps the body of a stream append or create (413 beyond).
	MaxAppendBytes int64
	// MaxAttachmentBytes caps the file of an attachment upload (413 beyond): 25 MiB, as
	// in Electric Agents.
	MaxAttachmentBytes int64
	// LongPollTimeout is how long a live=long-poll read waits for data before 204.
	LongPollTimeout time.Duration
	// BodyReadTimeout bounds how long a request body may take to arrive (408 beyond);
	// 0 takes the default, negative turns it off.
	BodyReadTimeout time.Duration
	// MaxBytesInFlight bounds the bytes the server holds for requests in flight (response
	// bodies being written, request bodies being read and stored; see budget): 256 MiB.
	MaxBytesInFlight int64
	// MaxPrincipalBytesInFlight is one principal's share of it (a quarter by default).
	MaxPrincipalBytesInFlight int64
	// BytesInFlightWait is how long a request waits for bytes in flight to be free before
	// it is refused with 503 + Retry-After (1s; negative: no wait).
	BytesInFlightWait time.Duration
	// WriteTimeout and WriteMinRate bound how long writing a response may take: the
	// timeout plus its size at the rate (30s + 64 KiB/s); a client that reads slower is
	// disconnected, and what its response held is released. Live reads count each
	// event on its own, so an idle live connection is never cut.
	WriteTimeout time.Duration
	WriteMinRate int64
	// MaxStreamPathBytes caps the length of a stream path (400 beyond).
	MaxStreamPathBytes int
	// SSELifetime is how long a live=sse response stays open before the server ends it
	// (clients reconnect from the last offset; this lets proxies and CDNs collapse).
	SSELifetime time.Duration
	// ClaimTokens, when set, also admits direct appends to an entity's main stream that
	// carry a write token claimed for a webhook wake (Electric's wake callbacks).
	ClaimTokens func(ctx context.Context, streamPath, token string) (bool, error)
	// Outbound is which addresses serve-endpoint discovery and dispatch targets may
	// reach (the zero policy: https public hosts and http on this machine).
	Outbound outbound.Policy
	// Auth authenticates requests (nil: dev mode, the Electric-Principal header).
	Auth authn.Authenticator
	// CORSOrigins are the browser origins ("scheme://host[:port]") allowed to call the
	// API; "*" allows any (for public read-mostly deployments behind their own auth).
	CORSOrigins []string
	// LoopbackOnly is dev mode on a loopback address: loopback origins are allowed too,
	// and a Host header that is not a loopback name is refused (DNS rebinding).
	LoopbackOnly bool
	// PublicStreamPrefixes are path prefixes under which plain streams are public: every
	// authenticated principal may read and append (deleting and grants stay with the
	// owner). Empty: no stream is public.
	PublicStreamPrefixes []string
	// Quotas bound what one principal may create (429 QUOTA_EXCEEDED beyond); the
	// zero value means quota.Defaults, a negative field turns that quota off.
	Quotas quota.Limits
	// Grants and Checker are the permission grants and their checks (nil: made over the
	// store's database, with no admin principals).
	Grants  *authz.Store
	Checker *authz.Checker
}

func (c *Config) setDefaults() {
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.MaxAppendBytes <= 0 {
		c.MaxAppendBytes = 8 << 20
	}
	if c.MaxAttachmentBytes <= 0 {
		c.MaxAttachmentBytes = 25 << 20
	}
	if c.LongPollTimeout <= 0 {
		c.LongPollTimeout = 20 * time.Second
	}
	if c.BodyReadTimeout == 0 {
		c.BodyReadTimeout = 30 * time.Second
	}
	if c.MaxBytesInFlight <= 0 {
		c.MaxBytesInFlight = 256 << 20
	}
	if c.MaxPrincipalBytesInFlight <= 0 {
		c.MaxPrincipalBytesInFlight = c.MaxBytesInFlight / 4
	}
	if c.BytesInFlightWait == 0 {
		c.BytesInFlightWait = time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 30 * time.Second
	}
	if c.WriteMinRate <= 0 {
		c.WriteMinRate = 64 << 10
	}
	if c.MaxStreamPathBytes <= 0 {
		c.MaxStreamPathBytes = textpolicy.DefaultMaxPathBytes
	}
	if c.SSELifetime <= 0 {
		c.SSELifetime = 60 * time.Second
	}
	if c.Quotas == (quota.Limits{}) {
		c.Quotas = quota.Defaults()
	}
}

// Server serves the API.
type Server struct {
	cfg      Config
	log      *zap.Logger
	streams  *streamdb.Store
	registry *entity.Registry

	live     context.Context // cancelled by Shutdown
	stopLive context.CancelFunc

	wakes       *wakereg.Service // Electric's cross-entity wakes (a handler's manifest)
	entities    EntityRoutes     // Electric's entity API (Deps.Entities)
	routeMounts []routeMount
	home        string // where a browser opening "/" is sent (Deps.Home)
	// bg tracks the goroutines requests start (the outage probe): they end with live,
	// and Wait waits for them.
	bg     lifecycle.Background
	ds     *dsapi.Server // the Durable Streams protocol
	outage *outage
	budget *inflight.Budget // bytes in flight

	auth    authn.Authenticator
	checker *authz.Checker
	grants  *authz.Store

	// loosened, set only by a test, lets decideStream allow what it answers true for:
	// the isolation matrix shows that it notices a loosened rule.
	loosened atomic.Pointer[func(streamdb.AccessKind, dsapi.Op) bool]
}

// Routes registers a package's routes on r; wrap turns its handlers into http handlers
// that answer failures the way every route of the API does.
type Routes func(r chi.Router, wrap func(httpx.HandlerFunc) http.HandlerFunc)

// MountRoutes serves routes under prefix (e.g. "/v1/stream/__ds" for the Durable Streams
// subscription APIs of package dssub), behind the common middleware and with the API's
// failure answers (503 while the database is away, nothing for a client that left).
// Call it before Handler.
func (s *Server) MountRoutes(prefix string, routes Routes) {
	s.routeMounts = append(s.routeMounts, routeMount{prefix: prefix, routes: routes})
}

type routeMount struct {
	prefix string
	routes Routes
}

// Deps are the parts the API serves: it calls them and holds no state of its own
// beyond requests in flight.
type Deps struct {
	Streams  *streamdb.Store
	Registry *entity.Registry
	// Wakes are Electric's cross-entity wakes: a handler's appends to its entity's
	// stream register its manifest's wakes.
	Wakes *wakereg.Service
	// Entities registers Electric's entity API (api/entityapi) under /_electric; nil
	// serves only the Durable Streams protocol and the server's own routes.
	Entities EntityRoutes
	// Home is where a browser's GET / (Accept names text/html) is redirected, the
	// console; other clients of "/" still get the 404 that no stream lives there.
	Home string
}

// New returns a Server.
func New(cfg Config, log *zap.Logger, d Deps) *Server {
	cfg.setDefaults()
	live, stopLive := context.WithCancel(context.Background())
	streams, registry := d.Streams, d.Registry
	s := &Server{cfg: cfg, log: log.Named("api"), streams: streams, registry: registry,
		live: live, stopLive: stopLive, wakes: d.Wakes, entities: d.Entities, home: d.Home}
	s.budget = inflight.New(cfg.MaxBytesInFlight, cfg.MaxPrincipalBytesInFlight, cfg.BytesInFlightWait)
	s.ds = dsapi.New(dsapi.Config{LongPollTimeout: cfg.LongPollTimeout, SSELifetime: cfg.SSELifetime,
		MaxAppendBytes: cfg.MaxAppendBytes, MaxStreamPathBytes: cfg.MaxStreamPathBytes,
		WriteTimeout: cfg.WriteTimeout, WriteMinRate: cfg.WriteMinRate}, s.log, streams, s.budget, streamPolicy{s})
	s.auth = cfg.Auth
	if s.auth == nil {
		s.auth = authn.Dev{}
	}
	s.grants, s.checker = cfg.Grants, cfg.Checker
	if s.grants == nil || s.checker == nil {
		s.grants, s.checker = authz.New(streams.DB(), registry, nil)
	}
	s.outage = newOutage(s.log, live, streams.DB().Ping, func(f func()) { s.bg.Go(f) })
	return s
}

// Handler returns the router.
func (s *Server) Handler() http.Handler {
	r := chi.NewRouter()
	r.Use(requestID, s.commonHeaders, accessLog(s.log), recoverer(s.log), checkRequestText, s.bodyDeadline)
	r.NotFound(s.answer(func(w http.ResponseWriter, r *http.Request) error {
		return newError(http.StatusNotFound, CodeNotFound, "No route for "+r.Method+" "+r.URL.Path)
	}))
	r.MethodNotAllowed(s.answer(func(w http.ResponseWriter, r *http.Request) error {
		return newError(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "Method "+r.Method+" is not allowed on "+r.URL.Path)
	}))

	r.Route("/_electric", func(r chi.Router) {
		r.Get("/health", s.handle(s.health))
		r.Get("/ready", s.handle(s.ready))
		r.Method(http.MethodGet, "/metrics", s.handle(func(w http.ResponseWriter, r *http.Request) error {
			metrics.Handler().ServeHTTP(w, r)
			return nil
		}))
		if s.entities != nil {
			s.entities(r, Kit{s}, s.handle)
		}
		r.Handle("/shared-state/{id}", s.sharedStateRoutes())
		r.Handle("/pg-sync/*", s.pgSyncRoutes())
		r.Route("/stream-grants", func(r chi.Router) {
			r.Get("/", s.handle(s.listStreamGrants))
			r.Post("/", s.handle(s.addStreamGrant))
			r.Delete("/{grantId}", s.handle(s.revokeStreamGrant))
		})
	})

	for _, rm := range s.routeMounts {
		r.Route(rm.prefix, func(r chi.Router) { rm.routes(r, s.handle) })
	}
	streams := s.streamRoutes()
	r.Handle(dsapi.StreamAlias+"/*", streams)
	r.Handle("/*", streams)
	return r
}

// handlerFunc is a handler that reports failure by returning an error: an *Error is
// written as the envelope; anything else is answered by writeFailure.
type handlerFunc = httpx.HandlerFunc

// answer is handle for what is not a route (404, 405): nothing to admit.
func (s *Server) answer(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeFailure(w, r, err)
		}
	}
}

func (s *Server) handle(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r, err := s.admit(r)
		if err == nil {
			err = h(w, r)
		}
		if err == nil {
			return
		}
		s.writeFailure(w, r, err)
	}
}

// health answers {"status":"ok"} when the server can reach Postgres, and 503 otherwise,
// so that load balancers take a server without its database out of rotation.
// ready is GET /_electric/ready, for load balancers: 200 only while this process can
// commit (its database is a writable primary whose commits complete, a synchronous
// standby included) and is not shutting down; 503 otherwise. /_electric/health says only
// that the process runs and reaches Postgres.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) error {
	if s.live.Err() != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "shutting down"})
		return nil
	}
	if err := s.streams.CanCommit(r.Context()); err != nil {
		// debug: a probe every few seconds during an outage would repeat what the outage
		// logger says once
		s.log.Debug("readiness check: cannot commit", zap.Error(err))
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "cannot commit"})
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	return nil
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.streams.DB().Ping(ctx); err != nil {
		s.log.Warn("health check: Postgres unreachable", zap.Error(err))
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "database unreachable"})
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}
