package dssub

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/entityd/entityd/streamdb"
)

// TestServer is a running entityd as this package's tests see it: its URL and database,
// its store and its subscription service (whose internals the tests inspect).
type TestServer struct {
	URL   string
	DBURL string
	Pool  *pgxpool.Pool
	Store *streamdb.Store
	Subs  *Service
}

// StartTestServer starts a complete server for a test (dbURL empty: a fresh database).
// These tests cannot import internal/testserver, which imports this package through
// server; testserver_test.go, an external test file that can, sets it at init, so the
// tests run against the server as server.Assemble wires it rather than a copy.
var StartTestServer func(t *testing.T, dbURL string, opts Options) TestServer
