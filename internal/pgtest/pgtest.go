// Package pgtest gives each test its own freshly migrated PostgreSQL database on a real
// server (never a mock).
//
// The server is the one named by ENTITYD_TEST_DATABASE_URL (an admin DSN, as exported
// by `go run ./internal/tools/withpg -- ...`). When that is unset, a throwaway cluster is
// started lazily, once per test binary, in a temporary directory; the package must then
// call Main from TestMain so that the cluster is stopped when the tests end:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// Migrations are applied once, to a template database named after a hash of the
// embedded migration files (entityd_tpl_<hash8>), under an advisory lock because several
// test binaries share one server. Every URL call then clones that template with CREATE
// DATABASE ... TEMPLATE, which takes milliseconds, and the clone is dropped when the
// test ends (kept, for inspection, when the test failed and ENTITYD_TEST_KEEP_DB=1).
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/entityd/entityd/internal/leakcheck"
	"github.com/entityd/entityd/internal/pgcluster"
	"github.com/entityd/entityd/migrations"
)

const (
	// EnvURL names the admin DSN of the server to create test databases on.
	EnvURL = "ENTITYD_TEST_DATABASE_URL"
	// EnvKeep, set to 1, keeps the database of a failed test instead of dropping it.
	EnvKeep = "ENTITYD_TEST_KEEP_DB"

	dbPrefix = "entityd_test_"
	// staleAfter is the age beyond which an unused, unkept test database counts as left
	// behind by a crashed run and may be dropped.
	staleAfter = time.Hour
)

var (
	mainCalled atomic.Bool
	dbCounter  atomic.Int64

	mu      sync.Mutex
	current *harness
	initErr error
)

// harness is the per-process state: the server, its template and a few admin connections.
type harness struct {
	adminURL string
	template string
	serverVN int // server_version_num

	cluster    *pgcluster.Cluster // non-nil when started lazily by this process
	clusterTmp string
	disarm     func() // of the cluster's exit watchdog
	kept       atomic.Bool

	conns chan *pgx.Conn // idle admin connections
}

// URL returns a DSN for a fresh database with every migration applied, dropped in
// t.Cleanup (kept when the test failed and ENTITYD_TEST_KEEP_DB=1).
func URL(t testing.TB) string {
	t.Helper()
	h, err := get()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := newDBName()
	if err := h.createDB(ctx, name); err != nil {
		t.Fatalf("pgtest: create test database: %v", err)
	}
	dsn, err := withDatabase(h.adminURL, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if t.Failed() && os.Getenv(EnvKeep) == "1" {
			_ = h.exec(ctx, fmt.Sprintf("COMMENT ON DATABASE %s IS %s", ident(name),
				literal("kept by pgtest after "+t.Name()+" failed")))
			h.kept.Store(true)
			t.Logf("pgtest: kept database %s: %s", name, dsn)
			return
		}
		if err := h.dropDB(ctx, name, true); err != nil {
			t.Logf("pgtest: warning: drop test database %s: %v", name, err)
		}
	})
	return dsn
}

// NewDatabase is URL for code that has no testing.TB (runnable examples): it returns a
// DSN for a fresh migrated database and the function that drops it.
func NewDatabase() (dsn string, drop func(), err error) {
	h, err := get()
	if err != nil {
		return "", nil, fmt.Errorf("pgtest: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := newDBName()
	if err := h.createDB(ctx, name); err != nil {
		return "", nil, fmt.Errorf("pgtest: create database: %w", err)
	}
	if dsn, err = withDatabase(h.adminURL, name); err != nil {
		return "", nil, err
	}
	return dsn, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = h.dropDB(ctx, name, true)
	}, nil
}

// Pool returns a pgxpool on URL(t), closed in t.Cleanup (before the database is dropped).
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	dsn := URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatalf("pgtest: open pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// Main runs the tests, stops the cluster started lazily by this test binary (if any),
// and fails the run if the tests left goroutines behind (internal/leakcheck). Call it
// from TestMain: func TestMain(m *testing.M) { pgtest.Main(m) }.
func Main(m *testing.M) {
	mainCalled.Store(true)
	leakcheck.Main(m, func() error {
		if err := shutdown(); err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
		return nil
	})
}

func get() (*harness, error) {
	mu.Lock()
	defer mu.Unlock()
	if current != nil || initErr != nil {
		return current, initErr
	}
	h, err := setup()
	if err != nil {
		initErr = err
		return nil, err
	}
	current = h
	return h, nil
}

func setup() (*harness, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h := &harness{adminURL: os.Getenv(EnvURL), conns: make(chan *pgx.Conn, 4)}
	if h.adminURL == "" {
		if !mainCalled.Load() {
			return nil, errors.New(EnvURL + " is not set, so pgtest starts a throwaway PostgreSQL cluster for this test binary, " +
				"and stopping it needs `func TestMain(m *testing.M) { pgtest.Main(m) }` in this package " +
				"(or run the tests under `go run ./internal/tools/withpg -- go test ...`)")
		}
		if err := h.startCluster(ctx); err != nil {
			return nil, err
		}
	}
	var err error
	if h.template, err = templateName(); err != nil {
		return nil, err
	}
	if err := h.ensureTemplate(ctx); err != nil {
		h.close()
		return nil, fmt.Errorf("prepare template database %s: %w", h.template, err)
	}
	h.sweep(ctx)
	return h, nil
}

func (h *harness) startCluster(ctx context.Context) error {
	tmp, err := pgcluster.MkdirTemp("", "entityd-pgtest-")
	if err != nil {
		return err
	}
	c, err := pgcluster.Start(ctx, pgcluster.Options{
		DataDir:  filepath.Join(tmp, "data"),
		Database: "postgres",
		Fsync:    false,
		Settings: map[string]string{"max_connections": "300"},
	})
	if err != nil {
		_ = os.RemoveAll(tmp)
		if errors.Is(err, pgcluster.ErrNotInstalled) {
			return err // its one-line message names the install command
		}
		return fmt.Errorf("start a throwaway PostgreSQL cluster (or set %s): %w", EnvURL, err)
	}
	// If the test binary dies without reaching Main's cleanup (panic, -timeout, kill),
	// a watchdog stops the server and removes the directory.
	disarm, err := c.StopOnExit(tmp)
	if err != nil {
		_ = c.Stop(ctx)
		_ = os.RemoveAll(tmp)
		return err
	}
	h.cluster, h.clusterTmp, h.disarm, h.adminURL = c, tmp, disarm, c.AdminURL()
	return nil
}

func shutdown() error {
	mu.Lock()
	h := current
	current, initErr = nil, errors.New("pgtest: used after Main returned")
	mu.Unlock()
	if h == nil {
		return nil
	}
	h.close()
	if h.cluster == nil {
		return nil
	}
	if h.kept.Load() {
		// The cluster outlives this process so the kept databases can be inspected.
		h.disarm()
		fmt.Fprintf(os.Stderr, "pgtest: kept databases live in the throwaway cluster at %s (data dir %s); stop it with: %s stop -D %s && rm -rf %s\n",
			h.adminURL, h.cluster.DataDir(), pgCtlCommand(), h.cluster.DataDir(), h.clusterTmp)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := h.cluster.Stop(ctx); err != nil {
		return err
	}
	return os.RemoveAll(h.clusterTmp)
}

func pgCtlCommand() string {
	pgCtl := "pg_ctl"
	if dir, err := pgcluster.FindBinaries(); err == nil {
		pgCtl = filepath.Join(dir, "pg_ctl")
	}
	if os.Geteuid() == 0 {
		return "runuser -u postgres -- " + pgCtl
	}
	return pgCtl
}

// templateName derives the template database's name from the embedded migration files,
// so a changed migration gets a new template instead of a stale one.
func templateName() (string, error) {
	sum := sha256.New()
	err := fs.WalkDir(migrations.FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS(), path)
		if err != nil {
			return err
		}
		fmt.Fprintf(sum, "%s\x00%d\x00", path, len(b))
		sum.Write(b)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hash migrations: %w", err)
	}
	return "entityd_tpl_" + hex.EncodeToString(sum.Sum(nil))[:8], nil
}

// ensureTemplate creates and migrates the template database unless a complete one
// exists. Completion is marked by datistemplate, set as the last step; the advisory lock
// serializes test binaries sharing the server.
func (h *harness) ensureTemplate(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, h.adminURL)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.Background()) }()
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&h.serverVN); err != nil {
		return err
	}
	lockKey := fnv.New64a()
	lockKey.Write([]byte("entityd pgtest " + h.template))
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(lockKey.Sum64())); err != nil {
		return fmt.Errorf("advisory lock: %w", err)
	}
	// The lock is released when conn closes, also on the error paths.

	var isTemplate bool
	err = conn.QueryRow(ctx, "SELECT datistemplate FROM pg_database WHERE datname = $1", h.template).Scan(&isTemplate)
	switch {
	case err == nil && isTemplate:
		return nil
	case err == nil: // left incomplete by a crashed run
		if _, err := conn.Exec(ctx, "DROP DATABASE "+ident(h.template)+h.force()); err != nil {
			return err
		}
	case !errors.Is(err, pgx.ErrNoRows):
		return err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident(h.template)+" TEMPLATE template0"); err != nil {
		return err
	}
	dsn, err := withDatabase(h.adminURL, h.template)
	if err != nil {
		return err
	}
	mconn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	_, err = migrations.Up(ctx, mconn)
	_ = mconn.Close(context.Background())
	if err != nil {
		return err
	}
	// No connections allowed: CREATE DATABASE ... TEMPLATE fails while anyone is connected.
	_, err = conn.Exec(ctx, "ALTER DATABASE "+ident(h.template)+" WITH ALLOW_CONNECTIONS false IS_TEMPLATE true")
	return err
}

// createDB clones the template, retrying while the template's last backend (the one
// that migrated it) is still exiting.
func (h *harness) createDB(ctx context.Context, name string) error {
	// PostgreSQL 15+'s default STRATEGY WAL_LOG is kept: FILE_COPY costs the same alone
	// but runs two checkpoints per database, which get slow while parallel tests write.
	stmt := "CREATE DATABASE " + ident(name) + " TEMPLATE " + ident(h.template)
	backoff := 5 * time.Millisecond
	recreated := false
	for {
		err := h.exec(ctx, stmt)
		var pgErr *pgconn.PgError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &pgErr) && pgErr.Code == "55006": // source database is being accessed by other users
			select {
			case <-ctx.Done():
				return err
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 200*time.Millisecond)
		case errors.As(err, &pgErr) && pgErr.Code == "3D000" && !recreated: // template dropped behind our back
			recreated = true
			if err := h.ensureTemplate(ctx); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

func (h *harness) dropDB(ctx context.Context, name string, force bool) error {
	stmt := "DROP DATABASE IF EXISTS " + ident(name)
	if force {
		stmt += h.force() // a test may have leaked a connection
	}
	return h.exec(ctx, stmt)
}

func (h *harness) force() string {
	if h.serverVN >= 130000 {
		return " WITH (FORCE)"
	}
	return ""
}

// sweep drops test databases that crashed runs left behind: older than staleAfter
// (their name starts with the creation time), unused, and not kept on purpose.
func (h *harness) sweep(ctx context.Context) {
	conn, err := h.acquire(ctx)
	if err != nil {
		return
	}
	rows, err := conn.Query(ctx, `
		SELECT datname FROM pg_database d
		WHERE datname LIKE 'entityd\_test\_%'
		  AND shobj_description(d.oid, 'pg_database') IS NULL
		  AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.datid = d.oid)`)
	var names []string
	if err == nil {
		names, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	h.release(conn, err)
	for _, name := range names {
		tsStr, _, _ := strings.Cut(strings.TrimPrefix(name, dbPrefix), "_")
		ts, err := strconv.ParseInt(tsStr, 10, 64)
		if err != nil || time.Since(time.Unix(ts, 0)) < staleAfter {
			continue
		}
		_ = h.dropDB(ctx, name, false)
	}
}

func (h *harness) exec(ctx context.Context, sql string) error {
	conn, err := h.acquire(ctx)
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, sql)
	h.release(conn, err)
	return err
}

// acquire returns an idle admin connection or opens one. (CREATE/DROP DATABASE cannot
// run in a transaction, and a handful of reused connections is all this needs.)
func (h *harness) acquire(ctx context.Context) (*pgx.Conn, error) {
	select {
	case c := <-h.conns:
		return c, nil
	default:
		return pgx.Connect(ctx, h.adminURL)
	}
}

func (h *harness) release(c *pgx.Conn, err error) {
	var pgErr *pgconn.PgError
	if (err == nil || errors.As(err, &pgErr)) && !c.IsClosed() {
		select {
		case h.conns <- c:
			return
		default:
		}
	}
	_ = c.Close(context.Background())
}

func (h *harness) close() {
	for {
		select {
		case c := <-h.conns:
			_ = c.Close(context.Background())
		default:
			return
		}
	}
}

// newDBName is unique across parallel test binaries: creation time (for sweep), pid,
// a per-process counter and random bytes.
func newDBName() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s%d_%d_%d_%s", dbPrefix, time.Now().Unix(), os.Getpid(), dbCounter.Add(1), hex.EncodeToString(b[:]))
}

// withDatabase points dsn (URL or keyword/value form) at database db.
func withDatabase(dsn, db string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("parse %s: %w", EnvURL, err)
		}
		u.Path, u.RawPath = "/"+db, ""
		return u.String(), nil
	}
	return dsn + " dbname=" + dsnValue(db), nil // later keywords override earlier ones
}

func ident(name string) string { return pgx.Identifier{name}.Sanitize() }

// literal quotes s as an SQL string (standard_conforming_strings on).
func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// dsnValue quotes s as a value in a keyword/value connection string.
func dsnValue(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
