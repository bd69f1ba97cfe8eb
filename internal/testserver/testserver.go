// Package testserver starts a complete entityd (store, registry, send path, HTTP API) on
// a fresh Postgres database for tests, the way cmd/server wires it, on an httptest
// server. Tests talk to it over real HTTP.
package testserver

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/internal/metrics"
	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/internal/schemas"
	"github.com/entityd/entityd/streamdb"
)

// Options adjust the server; zero values take the production defaults, except
// LongPollTimeout which defaults to 500ms so tests that wait for a 204 stay fast.
type Options struct {
	API       api.Config
	Limits    inbox.Limits
	Streams   streamdb.Options
	DBURL     string // an existing database (e.g. to share one between two servers)
	QuietLogs bool
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
	HTTP     *httptest.Server
}

// Start starts a server and stops it when the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	ctx := context.Background()
	dbURL := opts.DBURL
	if dbURL == "" {
		dbURL = pgtest.URL(t)
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatalf("testserver: connect: %v", err)
	}
	log := zap.NewNop()
	if !opts.QuietLogs {
		log = zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	}
	sopts := opts.Streams
	sopts.Logger = log
	store, err := streamdb.Open(ctx, pool, sopts)
	if err != nil {
		t.Fatalf("testserver: open store: %v", err)
	}
	registry := entity.New(store, schemas.NewCache(), log)
	sender := inbox.NewSender(registry, store, opts.Limits)
	cfg := opts.API
	if cfg.LongPollTimeout == 0 {
		cfg.LongPollTimeout = 500 * time.Millisecond
	}
	apiServer := api.New(cfg, log, store, registry, sender)
	hs := httptest.NewServer(apiServer.Handler())
	untrackPool := metrics.TrackPool(pool)
	untrackParked := metrics.TrackParked(apiServer.ParkedSubscribers)
	delayedCtx, stopDelayed := context.WithCancel(ctx)
	delayedDone := make(chan struct{})
	go func() { defer close(delayedDone); sender.RunDelayed(delayedCtx, log.Named("delayed")) }()
	t.Cleanup(func() {
		apiServer.Shutdown()
		hs.Close()
		apiServer.Wait()
		stopDelayed()
		<-delayedDone
		untrackParked()
		untrackPool()
		store.Close()
		pool.Close()
	})
	return &Server{URL: hs.URL, DBURL: dbURL, Pool: pool, Streams: store, Registry: registry, Sender: sender,
		API: apiServer, HTTP: hs}
}
