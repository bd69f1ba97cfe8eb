// Package testserver starts a complete entityd on a fresh Postgres database for tests,
// assembled by server.Assemble exactly as cmd/server runs it (store, registry, send path,
// wake delivery, subscriptions, HTTP API), on an httptest server. Tests talk to it over
// real HTTP.
package testserver

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/dssub"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/internal/lifecycle"
	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/livefeed"
	"github.com/entityd/entityd/mcpserve"
	"github.com/entityd/entityd/pgsync"
	"github.com/entityd/entityd/runtime"
	"github.com/entityd/entityd/server"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wake"
	"github.com/entityd/entityd/webhooksrc"
)

// Options adjust the server; zero values take the production defaults, except
// LongPollTimeout which defaults to 500ms so tests that wait for a 204 stay fast.
type Options struct {
	API       api.Config
	Limits    inbox.Limits
	Streams   streamdb.Options
	Subs      dssub.Options
	DBURL     string // an existing database (e.g. to share one between two servers)
	QuietLogs bool
	// Logger, when set, is the server's logger (a test that asserts on log lines).
	Logger *zap.Logger
	// Admins are principals that pass every permission check.
	Admins []string
	// Definitions are Go entity types the server hosts (their handlers run in it), as
	// `make run` hosts the demo assistant.
	Definitions []runtime.EntityDefinition
	// ShapeSnapshotRows pages Electric shape snapshots (server.Config).
	ShapeSnapshotRows int
	// MCP bounds MCP sessions (server.Config).
	MCP mcpserve.Options
	// Feed bounds the live feed (server.Config).
	Feed livefeed.Options
	// Wake tunes the in-server wake delivery (server.Config); zero values take the
	// production defaults.
	Wake wake.Options
	// WebhookSources bounds deliveries to webhook sources (server.Config).
	WebhookSources webhooksrc.Options
	// PgSync configures pgSync observations (server.Config); off unless Tables is set.
	PgSync pgsync.Options
}

// Server is a running test server.
type Server struct {
	URL      string
	DBURL    string
	Pool     *pgxpool.Pool
	Streams  *streamdb.Store
	Registry *entity.Registry
	Sender   *inbox.Sender
	API      *api.Server
	MCP      *mcpserve.Service
	Feed     *livefeed.Service
	// Subs is the Durable Streams subscription service (webhook and pull-wake).
	Subs *dssub.Service
	HTTP *httptest.Server

	stop func()
}

// Start starts a server and stops it when the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	ctx := context.Background()
	dbURL := opts.DBURL
	if dbURL == "" {
		dbURL = pgtest.URL(t)
	}
	pool, err := openPool(ctx, dbURL)
	if err != nil {
		t.Fatalf("testserver: connect: %v", err)
	}
	log := zap.NewNop()
	switch {
	case opts.Logger != nil:
		log = opts.Logger
	case !opts.QuietLogs:
		log = zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	}
	cfg := opts.API
	if cfg.LongPollTimeout == 0 {
		cfg.LongPollTimeout = 500 * time.Millisecond
	}
	var services lifecycle.Group
	srv := server.New(server.Config{DatabaseURL: dbURL, API: cfg, Limits: opts.Limits, Store: opts.Streams,
		Subscriptions: opts.Subs, Logger: log, Admins: opts.Admins, ShapeSnapshotRows: opts.ShapeSnapshotRows,
		MCP: opts.MCP, Feed: opts.Feed, Wake: opts.Wake, WebhookSources: opts.WebhookSources,
		PgSync: opts.PgSync}, opts.Definitions...)
	a, err := srv.Assemble(ctx, pool, &services)
	if err != nil {
		services.Stop(ctx)
		pool.Close()
		t.Fatalf("testserver: assemble: %v", err)
	}
	hs := httptest.NewServer(a.API.Handler())
	var stop sync.Once
	store, registry, sender, apiServer := a.Store, a.Registry, a.Sender, a.API
	srvOut := &Server{URL: hs.URL, DBURL: dbURL, Pool: pool, Streams: store, Registry: registry, Sender: sender,
		API: apiServer, MCP: a.MCP, Feed: a.Feed, Subs: a.Subs, HTTP: hs}
	srvOut.stop = func() {
		stop.Do(func() {
			a.API.Shutdown()
			hs.Close()
			a.API.Wait()
			stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			services.Stop(stopCtx)
			pool.Close()
		})
	}
	t.Cleanup(srvOut.stop)
	return srvOut
}

// Stop stops the server before the test ends (a process that goes away); the test's
// cleanup does it otherwise.
func (s *Server) Stop() { s.stop() }

// openPool opens the pool as server.Run does (its size and generic plans), so that tests
// that load the server see the connection limits production has.
func openPool(ctx context.Context, dbURL string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 32 // server.Config.DBMaxConns's default
	cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	return pgxpool.NewWithConfig(ctx, cfg)
}
