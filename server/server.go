// Package server assembles a complete entityd: Postgres (a URL, or a private cluster
// started from the machine's binaries), migrations, the stream store, the entity
// registry, the send path, the Go runtime with its entity definitions, wake delivery, and
// the HTTP API. cmd/server and programs that embed entityd with their own entities both
// use it:
//
//	srv := server.New(server.Config{Addr: ":4437"}, myEntityDefinition)
//	err := srv.Run(ctx) // until ctx is cancelled, then a graceful shutdown
package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
	"golang.org/x/net/netutil"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/dssub"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/internal/lifecycle"
	"github.com/entityd/entityd/internal/pgcluster"
	"github.com/entityd/entityd/livefeed"
	"github.com/entityd/entityd/mcpserve"
	"github.com/entityd/entityd/migrations"
	"github.com/entityd/entityd/pgsync"
	"github.com/entityd/entityd/runtime"
	"github.com/entityd/entityd/slashcmd"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wake"
	"github.com/entityd/entityd/webhooksrc"
)

// Config configures a server. Zero values take the defaults documented in the README.
type Config struct {
	// Addr is the listen address (default ":4437").
	Addr string
	// DatabaseURL is the Postgres URL; empty starts a private cluster under DataDir/pg.
	DatabaseURL string
	// DataDir holds the private cluster (default "./.entityd").
	DataDir string
	// DBMaxConns sizes the connection pool (default 32).
	DBMaxConns int
	// CommitLanes is the number of concurrent group-commit transactions (default 2).
	CommitLanes int
	// Store tunes the stream store (CommitLanes, when set, overrides its Lanes).
	Store  streamdb.Options
	API    api.Config
	Limits inbox.Limits
	Wake   wake.Options
	// Subscriptions tunes the Durable Streams subscription APIs (webhook and pull-wake).
	Subscriptions dssub.Options
	// WebhookSources bounds deliveries to webhook sources.
	WebhookSources webhooksrc.Options
	// ShutdownTimeout bounds the graceful shutdown (default 30s).
	ShutdownTimeout time.Duration
	// TLSCertFile and TLSKeyFile, when both set, make the server speak HTTPS (and so
	// HTTP/2 to browsers, which multiplexes a page's live requests over one connection
	// instead of queueing them behind the six HTTP/1.1 allows per origin).
	TLSCertFile, TLSKeyFile string
	// HTTP bounds connections: header read, idle time, header size and how many at once.
	HTTP HTTPLimits
	// Retention bounds how long idempotency keys and finished work are kept.
	Retention Retention
	// ShapeSnapshotRows caps the rows of one response of an Electric shape's initial
	// snapshot (default 10,000; larger shapes come in pages).
	ShapeSnapshotRows int
	// MCP bounds the entities' MCP sessions (per principal, idle lifetime; zero values
	// take mcpserve's defaults). Its MaxBodyBytes and Logger come from API and Logger.
	MCP mcpserve.Options
	// Feed bounds the live feed (sessions per principal, reads per session, its queue
	// and write deadline; zero values take livefeed's defaults).
	Feed livefeed.Options
	// SlashCommands sets the owner limits of dynamic slash-command registrations
	// (MaxOwnerBytes, MaxOwners; zero takes slashcmd.DefaultLimits' value). The
	// definition limits are always slashcmd.DefaultLimits'.
	SlashCommands slashcmd.Limits
	// PgSync configures pgSync observations of Postgres tables (package pgsync): the
	// allow-list of observable tables (empty: off), the slot and its idle drop.
	PgSync pgsync.Options
	// Admins are principals ("kind:id") that pass every permission check, like the
	// server's own system principals (operators in jwt mode).
	Admins []string
	// Logger defaults to a production zap logger.
	Logger *zap.Logger
	// Ready, if set, is called with the listening address once the server serves.
	Ready func(addr net.Addr)
}

// HTTPLimits bound what one client's connections can hold. Zero values take the
// defaults documented in the README; request bodies are bounded by API.BodyReadTimeout.
type HTTPLimits struct {
	// ReadHeaderTimeout bounds how long a request's headers may take to arrive (10s).
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request for this long (120s).
	IdleTimeout time.Duration
	// MaxHeaderBytes caps the request line and headers (64 KiB).
	MaxHeaderBytes int
	// MaxConns caps open connections; more wait in the listen backlog until one closes
	// (default: the open-file limit less 256, at most 100,000; each SSE subscriber holds
	// one).
	MaxConns int
}

func (l *HTTPLimits) setDefaults() {
	if l.ReadHeaderTimeout <= 0 {
		l.ReadHeaderTimeout = 10 * time.Second
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = 120 * time.Second
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = 64 << 10
	}
	if l.MaxConns <= 0 {
		l.MaxConns = defaultMaxConns()
	}
}

// Server is an entityd instance.
type Server struct {
	cfg  Config
	defs []runtime.EntityDefinition
	log  *zap.Logger
}

// New returns a server that runs the handlers of defs.
func New(cfg Config, defs ...runtime.EntityDefinition) *Server {
	if cfg.Addr == "" {
		cfg.Addr = ":4437"
	}
	if cfg.DataDir == "" {
		cfg.DataDir = "./.entityd"
	}
	if cfg.DBMaxConns <= 0 {
		cfg.DBMaxConns = 32
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 30 * time.Second
	}
	cfg.HTTP.setDefaults()
	cfg.Retention.setDefaults()
	if cfg.Logger == nil {
		cfg.Logger, _ = zap.NewProduction()
	}
	cfg.Wake.Logger = cfg.Logger
	cfg.Subscriptions.Logger = cfg.Logger
	return &Server{cfg: cfg, defs: defs, log: cfg.Logger}
}

// Migrate applies the database migrations and returns.
func (s *Server) Migrate(ctx context.Context) error {
	pool, stop, err := s.openDB(ctx)
	if err != nil {
		return err
	}
	defer stop()
	defer pool.Close()
	return migrate(ctx, pool, s.log)
}

// Run serves until ctx is cancelled, then shuts down gracefully: live reads end, requests
// in flight and running handlers finish, held entities are released, Postgres (if
// private) stops.
func (s *Server) Run(ctx context.Context) error {
	// Take the address first: a second server started by mistake (a port already in use)
	// must fail before it migrates, registers types or reconciles live entities. Until
	// Serve starts, connections wait in the listen backlog.
	tlsConfig, err := s.tlsConfig()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.cfg.Addr, err)
	}
	serving := false
	defer func() {
		if !serving {
			ln.Close()
		}
	}()
	pool, stopDB, err := s.openDB(ctx)
	if err != nil {
		return err
	}
	defer stopDB()
	defer pool.Close()
	if err := migrate(ctx, pool, s.log); err != nil {
		return err
	}
	var services lifecycle.Group
	// Stopped in the reverse order of their start, whatever happens below: the HTTP
	// server first (no new work), then the loops that make work, delivery, and the
	// store last.
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
		defer cancel()
		services.Stop(stopCtx)
	}()
	a, err := s.Assemble(ctx, pool, &services)
	if err != nil {
		return err
	}
	web := &httpService{server: &http.Server{
		Handler:           a.API.Handler(),
		ReadHeaderTimeout: s.cfg.HTTP.ReadHeaderTimeout,
		IdleTimeout:       s.cfg.HTTP.IdleTimeout,
		MaxHeaderBytes:    s.cfg.HTTP.MaxHeaderBytes,
		ErrorLog:          zap.NewStdLog(s.log.Named("http")),
		TLSConfig:         tlsConfig,
	}, listener: countConns(netutil.LimitListener(ln, s.cfg.HTTP.MaxConns)), api: a.API, log: s.log}
	serving = true // from here the HTTP service owns ln and closes it when it stops
	if err := services.Start(ctx, web); err != nil {
		return err
	}
	s.log.Info("entityd listening", zap.String("addr", ln.Addr().String()), zap.Strings("entity_types", a.Handlers.Types()),
		zap.String("console", consoleURL(ln.Addr(), tlsConfig != nil)))
	if s.cfg.Ready != nil {
		s.cfg.Ready(ln.Addr())
	}

	var runErr error
	select {
	case err := <-web.served:
		if !errors.Is(err, http.ErrServerClosed) {
			runErr = err
		}
	case <-ctx.Done():
	}
	s.log.Info("shutting down", zap.Duration("timeout", s.cfg.ShutdownTimeout))
	return runErr
}

// openDB connects to DatabaseURL, or starts the private cluster.
func (s *Server) openDB(ctx context.Context) (*pgxpool.Pool, func(), error) {
	stop := func() {}
	dbURL := s.cfg.DatabaseURL
	if dbURL == "" { // the private cluster: see embedded.go
		var err error
		dbURL, stop, err = startEmbedded(ctx, pgcluster.Options{DataDir: s.cfg.DataDir + "/pg", Database: "entityd", Logger: s.log, Fsync: true})
		if err != nil {
			return nil, func() {}, err
		}
	}
	poolCfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		stop()
		return nil, func() {}, fmt.Errorf("DATABASE_URL: %w", err)
	}
	poolCfg.MaxConns = int32(s.cfg.DBMaxConns)
	// Every statement is prepared once per connection and run many times with different
	// arguments; custom plans made Postgres plan the hottest ones on every execution.
	if _, set := poolCfg.ConnConfig.RuntimeParams["plan_cache_mode"]; !set {
		poolCfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
		// A generic plan is made once per connection from the statistics of that moment;
		// recycling connections lets plans follow tables that grew since.
		poolCfg.MaxConnLifetime = 10 * time.Minute
		poolCfg.MaxConnLifetimeJitter = time.Minute
	}
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		stop()
		return nil, func() {}, fmt.Errorf("connect to Postgres: %w", err)
	}
	return pool, stop, nil
}

func migrate(ctx context.Context, pool *pgxpool.Pool, log *zap.Logger) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("connect to Postgres: %w", err)
	}
	defer conn.Release()
	res, err := migrations.Up(ctx, conn.Conn())
	if err != nil {
		return err
	}
	if res.From != res.To {
		log.Info("database migrated", zap.Int32("from", res.From), zap.Int32("to", res.To))
	} else {
		log.Info("database schema is current", zap.Int32("version", res.To))
	}
	return nil
}

// commandLimits is slashcmd.DefaultLimits with the configured owner limits.
func commandLimits(c slashcmd.Limits) slashcmd.Limits {
	l := slashcmd.DefaultLimits
	if c.MaxOwnerBytes > 0 {
		l.MaxOwnerBytes = c.MaxOwnerBytes
	}
	if c.MaxOwners > 0 {
		l.MaxOwners = c.MaxOwners
	}
	return l
}
