// Package mcpserve serves every entity as an MCP server (Streamable HTTP) at
// /_electric/entities/<type>/<id>/mcp: its effective slash commands are MCP prompts,
// kept in step with the entity's slash-command collection stream, so a change reaches
// connected sessions as notifications/prompts/list_changed; a send tool delivers a
// composer_input built from a prompt invocation; the entity's timeline and state are
// subscribable resources read from its main stream (resources.go).
//
// One MCP server (the official Go SDK's) runs per entity that has sessions, with one
// goroutine that waits on the collection stream; entities without sessions cost nothing.
package mcpserve

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	neturl "net/url"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/entityd/entityd/authz"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/lifecycle"
	"github.com/entityd/entityd/internal/principal"
	"github.com/entityd/entityd/slashcmd"
	"github.com/entityd/entityd/streamdb"
)

// ProtocolVersions are the MCP versions an entity's server speaks, newest first: those of
// the initialize handshake over stateful Streamable HTTP sessions. 2026-07-28 (stateless
// requests, no initialize) is not among them: a request at it is refused with -32022
// and these versions, and an initialize asking for it is answered with 2025-11-25.
var ProtocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// Prefix is the route of an entity's MCP endpoint.
const Prefix = "/_electric/entities/{type}/{id}/mcp"

// Options configure the service. Zero values take the defaults in parentheses.
type Options struct {
	// MaxSessions bounds open MCP sessions over all entities (10,000) and per entity
	// (MaxSessionsPerEntity, 2,000): each holds an SSE stream and some memory.
	MaxSessions          int
	MaxSessionsPerEntity int
	// MaxSessionsPerPrincipal bounds the sessions one principal holds over all entities
	// (100): without it one principal could take every session of the server.
	MaxSessionsPerPrincipal int
	// SessionTimeout closes a session that made no request for this long (5 min): an
	// abandoned session holds its principal's place no longer than that. A client that
	// only listens on its GET stream pings within it to stay connected.
	SessionTimeout time.Duration
	// IdleEntity drops an entity's MCP server this long after its last session (1 min).
	IdleEntity time.Duration
	// MaxBodyBytes bounds one JSON-RPC request body (1 MiB).
	MaxBodyBytes int64
	// EventStoreBytes bounds the events kept for resumption (Last-Event-ID) per entity's
	// MCP server, over all its sessions (1 MiB; the oldest are dropped first).
	EventStoreBytes int
	// TimelineEvents and TimelineBytes bound the timeline resource: the newest events of
	// the main stream, at most this many (100) and this many bytes (256 KiB; the newest
	// event is always there).
	TimelineEvents int
	TimelineBytes  int
	// StateStreamBytes is the longest main stream the state resource materializes
	// (16 MiB): reading it means reading the whole stream.
	StateStreamBytes int64
	// ResourceUpdateInterval is the least time between two resources/updated
	// notifications for one entity (200 ms): a reply streamed in many small events
	// costs a subscribed client a few reads a second.
	ResourceUpdateInterval time.Duration
	// Live closes when the server starts shutting down: a session's GET stream, which a
	// client holds open for as long as it is connected (the TypeScript SDK opens one for
	// every client), ends then, so that it does not hold the shutdown up to its deadline.
	// The client reconnects to another server. nil: streams end only with Stop.
	Live   <-chan struct{}
	Logger *zap.Logger
}

func (o *Options) setDefaults() {
	if o.MaxSessions <= 0 {
		o.MaxSessions = 10_000
	}
	if o.EventStoreBytes <= 0 {
		o.EventStoreBytes = 1 << 20
	}
	if o.TimelineEvents <= 0 {
		o.TimelineEvents = 100
	}
	if o.TimelineBytes <= 0 {
		o.TimelineBytes = 256 << 10
	}
	if o.StateStreamBytes <= 0 {
		o.StateStreamBytes = 16 << 20
	}
	if o.ResourceUpdateInterval <= 0 {
		o.ResourceUpdateInterval = 200 * time.Millisecond
	}
	if o.MaxSessionsPerEntity <= 0 {
		o.MaxSessionsPerEntity = 2_000
	}
	if o.MaxSessionsPerPrincipal <= 0 {
		o.MaxSessionsPerPrincipal = 100
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 5 * time.Minute
	}
	if o.IdleEntity <= 0 {
		o.IdleEntity = time.Minute
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 1 << 20
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
}

// Deps are the parts of entityd the service uses.
type Deps struct {
	Entities *entity.Registry
	Streams  *streamdb.Store
	Sender   *inbox.Sender
	// Checker decides the send tool's write permission (nil: everyone may write).
	Checker *authz.Checker
	// Pool keeps sessions in the database (table mcp_sessions) so that they outlive
	// the process and reach other replicas; nil keeps them in memory only.
	Pool *pgxpool.Pool
}

// Service holds the per-entity MCP servers.
type Service struct {
	deps  Deps
	opts  Options
	log   *zap.Logger
	store *sessionStore // nil without Deps.Pool

	mu      sync.Mutex
	entries map[string]*entry // by entity URL
	open    int               // sessions open or being opened (sessions.go)
	owned   map[string]int    // of them, by principal
	places  map[string]*place // by session ID
	ctx     context.Context   // ends at Stop: followers and sessions stop with it
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// New returns a service; Start begins its janitor.
func New(deps Deps, opts Options) *Service {
	opts.setDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Service{deps: deps, opts: opts, log: opts.Logger.Named("mcp"), entries: map[string]*entry{},
		owned: map[string]int{}, places: map[string]*place{}, ctx: ctx, cancel: cancel}
	if deps.Pool != nil {
		s.store = &sessionStore{pool: deps.Pool}
	}
	return s
}

// Start runs the janitor that drops idle entities' servers.
func (s *Service) Start(context.Context) error {
	(&lifecycle.Every{Interval: s.opts.IdleEntity / 2, Run: s.dropIdle}).Go(s.ctx, &s.wg)
	return nil
}

// Stop ends every follower and closes every session.
func (s *Service) Stop(context.Context) {
	s.cancel()
	s.mu.Lock()
	entries := s.entries
	s.entries = map[string]*entry{}
	s.mu.Unlock()
	for _, en := range entries {
		en.close()
	}
	s.wg.Wait()
}

// Routes mounts the endpoint (GET opens a session's notification stream, POST carries
// JSON-RPC, DELETE ends a session).
func (s *Service) Routes(r chi.Router, wrap func(httpx.HandlerFunc) http.HandlerFunc) {
	h := wrap(s.serve)
	r.Get("/", h)
	r.Post("/", h)
	r.Delete("/", h)
}

// pathParam is a route parameter percent-decoded, as the api's admission reads it (so
// both name the same entity: /principal/user%3Aada is the entity of user:ada).
func pathParam(r *http.Request, name string) string {
	v := chi.URLParam(r, name)
	if u, err := neturl.PathUnescape(v); err == nil {
		return u
	}
	return v
}

// serve hands the request to the entity's MCP server. The api checked the caller's
// read permission before this runs; an unknown entity is a 404.
func (s *Service) serve(w http.ResponseWriter, r *http.Request) error {
	url := entitypath.URL(pathParam(r, "type"), pathParam(r, "id"))
	e, err := s.deps.Entities.Known(r.Context(), url)
	if errors.Is(err, entity.ErrNotFound) {
		return httpx.New(http.StatusNotFound, "NOT_FOUND", "Entity "+url+" not found")
	}
	if err != nil {
		return err
	}
	en, err := s.entryFor(r.Context(), e)
	if err != nil {
		return err
	}
	defer en.release()
	id := r.Header.Get("Mcp-Session-Id")
	if id != "" {
		if err := s.revive(r, en, id); err != nil {
			w.Header().Set("Retry-After", "5")
			return err
		}
	}
	switch {
	case r.Method == http.MethodPost && id == "": // opens a session
		who, _ := principal.FromContext(r.Context()) // api authenticated the caller
		p, err := s.reserve(en, who.String())
		if err != nil {
			w.Header().Set("Retry-After", "5")
			return err
		}
		sw := &settleWriter{ResponseWriter: w}
		if err := en.syncMessageTools(r.Context()); err != nil { // a schema added since
			s.log.Warn("mcp: refreshing the entity's message tools failed", zap.Error(err))
		}
		sw.settle = func() { s.hold(p, en, sw.Header().Get("Mcp-Session-Id")) }
		en.ids.opening.Lock() // one at a time: see sessionIDs
		en.http.ServeHTTP(sw, withSessionOwner(r))
		en.ids.opening.Unlock()
		sw.done()
		s.persist(p)
	case r.Method == http.MethodDelete:
		sw := &settleWriter{ResponseWriter: w, settle: func() { s.ended(en, id) }}
		en.http.ServeHTTP(sw, withSessionOwner(r))
		sw.done()
	case r.Method == http.MethodGet: // the session's notification stream
		ctx, cancel := s.untilShutdown(r.Context())
		defer cancel()
		en.http.ServeHTTP(&sseRetry{ResponseWriter: w}, withSessionOwner(r.WithContext(ctx)))
	default:
		en.http.ServeHTTP(w, withSessionOwner(r))
	}
	return nil
}

// untilShutdown is ctx, also cancelled once Options.Live closes.
func (s *Service) untilShutdown(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if s.opts.Live != nil {
		go func() {
			select {
			case <-s.opts.Live:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return ctx, cancel
}

// entryFor returns the entity's MCP server, creating it (and loading its prompts) on
// first use. The caller must release it.
func (s *Service) entryFor(ctx context.Context, e *entity.Entity) (*entry, error) {
	s.mu.Lock()
	en, ok := s.entries[e.URL]
	if !ok {
		if s.ctx.Err() != nil {
			s.mu.Unlock()
			return nil, httpx.New(http.StatusServiceUnavailable, "SHUTTING_DOWN", "The server is shutting down")
		}
		en = s.newEntry(e)
		s.entries[e.URL] = en
	}
	en.users++
	s.mu.Unlock()
	select {
	case <-en.ready:
	case <-ctx.Done():
		en.release()
		return nil, ctx.Err()
	}
	if en.err != nil {
		en.release()
		s.drop(en)
		return nil, en.err
	}
	return en, nil
}

// drop removes en (if it is still the entity's entry) and stops it.
func (s *Service) drop(en *entry) {
	s.mu.Lock()
	if s.entries[en.url] == en {
		delete(s.entries, en.url)
	}
	s.mu.Unlock()
	en.close()
}

// dropIdle, the janitor's round, drops the servers of entities nobody has used for
// IdleEntity.
func (s *Service) dropIdle(ctx context.Context) {
	now := time.Now()
	var idle []*entry
	s.mu.Lock()
	for url, en := range s.entries {
		if en.idleSince(now) > s.opts.IdleEntity {
			delete(s.entries, url)
			idle = append(idle, en)
		}
	}
	s.mu.Unlock()
	for _, en := range idle {
		en.close()
	}
	s.keepSessions(ctx)
}

// keepSessions, also the janitor's, marks the sessions this process holds as alive in
// the session store and deletes the rows no process has held for SessionTimeout and a
// janitor round more (their process died and no client came back).
func (s *Service) keepSessions(ctx context.Context) {
	if s.store == nil {
		return
	}
	s.mu.Lock()
	ids := make([]string, 0, len(s.places))
	for id := range s.places {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	if err := s.store.touch(ctx, ids); err != nil {
		s.log.Warn("mcp: marking sessions alive failed", zap.Error(err))
	}
	if _, err := s.store.expire(ctx, s.opts.SessionTimeout+s.opts.IdleEntity); err != nil {
		s.log.Warn("mcp: expiring abandoned sessions failed", zap.Error(err))
	}
}

// Sessions is how many MCP sessions are open (for tests and metrics).
func (s *Service) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, en := range s.entries {
		n += en.sessions()
	}
	return n
}

// SessionsOf is how many MCP sessions principal who ("kind:id") holds or is opening
// (for tests and metrics).
func (s *Service) SessionsOf(who string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.owned[who]
}

// sdkLogger sends the SDK's own log lines to zap at warn level and above.
func sdkLogger(log *zap.Logger) *slog.Logger {
	return slog.New(zapHandler{log: log})
}

// commandsOf lists the entity's effective commands.
func (s *Service) commandsOf(ctx context.Context, url string) ([]slashcmd.Row, error) {
	return s.deps.Entities.Commands().List(ctx, url)
}
