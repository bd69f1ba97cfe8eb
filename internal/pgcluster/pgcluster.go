// Package pgcluster runs a private PostgreSQL cluster from Go: `make run` uses one as the
// embedded default database and the test harness (internal/pgtest, internal/tools/withpg)
// uses throwaway ones.
//
// A cluster is a data directory initialized with initdb (trust authentication, superuser
// "postgres", UTF8, C locale). Its settings live in entityd.conf inside the data
// directory (included from postgresql.conf and rewritten at every start), its port in
// entityd.port, and the server log in postgres.log.
//
// By default (throwaway clusters) the server listens on 127.0.0.1 only, has no Unix
// socket, and a second Start on a running data directory shares the server.
//
// The embedded server database uses two more options:
//
//   - SocketOnly locks connections down: no TCP at all (empty listen_addresses), a Unix
//     socket (mode 0700) in a directory only the cluster's OS user can enter (mode 0700:
//     the data directory, or <os.TempDir()>/entityd-pg-<hash> when the socket path would
//     not fit in sun_path), and a pg_hba.conf rewritten at every start to the single line
//     `local all all trust`. A cluster made with TCP settings is converted at its next
//     start. URL names the socket directory.
//   - Exclusive makes one process own the data directory: Start takes an exclusive,
//     non-blocking flock on <DataDir>.lock (our pid inside) before anything else and
//     fails at once with an *InUseError (errors.Is ErrInUse) when another process holds
//     it. Holding the lock means that a server found running in the directory is an
//     orphan of a process that died without stopping it: Start stops it and starts it
//     afresh as its own. While the Cluster runs, a supervisor goroutine checks twice a
//     second that the postmaster lives and restarts it (pg_ctl start, with backoff from
//     250 ms to 10 s) if it dies (crash, OOM kill, SIGKILL); crash recovery keeps every
//     committed transaction when Fsync is on. Stop ends the supervisor, stops the server
//     and releases the lock; the kernel releases it if the process dies.
//
// PostgreSQL refuses to run as root. When this process is root, every PostgreSQL binary
// runs as the `postgres` OS user and the data directory is owned by it.
package pgcluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"
)

// Options configures Start.
type Options struct {
	// DataDir is the cluster directory; it is created (with its parents) if missing.
	DataDir string
	// Port is the TCP port on 127.0.0.1. 0 picks a free port on first init and remembers
	// it in the data directory (entityd.port) so later starts reuse it; if that port is
	// busy at a later start, another one is picked and remembered.
	Port int
	// Database is created if missing (default "entityd").
	Database string
	// Logger receives init/start/reuse/stop events (default: no logging).
	Logger *zap.Logger
	// Fsync false is for throwaway clusters: fsync, synchronous_commit and
	// full_page_writes are off and initdb skips syncing. True keeps PostgreSQL's durable
	// defaults.
	Fsync bool
	// Settings are extra postgresql.conf settings (e.g. "max_connections": "200"). They
	// are written after, and so override, the ones this package sets, except the
	// connection settings of a SocketOnly cluster, which always win.
	Settings map[string]string
	// SocketOnly serves connections on a Unix socket only, in a directory only the
	// cluster's OS user (and root) can enter, with pg_hba.conf allowing nothing else: only
	// processes of that user can connect. Port then only names the socket file.
	SocketOnly bool
	// Exclusive locks the data directory to this process (see the package comment): a
	// second Exclusive Start fails with an *InUseError, a server left running by a dead
	// process is taken over, and the server is supervised and restarted if it dies.
	Exclusive bool
}

// Cluster is a running PostgreSQL cluster, started by Start.
type Cluster struct {
	dataDir, binDir, database string
	port                      int
	startedHere               bool
	log                       *zap.Logger
	user                      *serverUser // non-nil when the binaries run as postgres (we are root)
	opts                      Options     // as given to Start, with defaults filled in
	socketOnly                bool
	socketDir                 string   // of a SocketOnly cluster
	lockFile                  *os.File // the data directory's flock, held by an Exclusive cluster
	sup                       *supervisor

	mu        sync.Mutex
	stopped   bool
	pid       int    // of the postmaster this process started
	disarm    func() // StopOnExit's watchdog, nil when not armed
	reaperDir string // StopOnExit's removeDir
}

const (
	portFileName = "entityd.port"
	confFileName = "entityd.conf"
	logFileName  = "postgres.log"
	includeLine  = "include_if_exists = '" + confFileName + "'"
	maxLogSize   = 64 << 20 // postgres.log is moved to postgres.log.1 at start beyond this
	// defaultTimeout bounds pg_ctl start/stop and the readiness wait when ctx has no deadline.
	defaultTimeout = 2 * time.Minute
)

var settingName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*$`)

// Start initializes the cluster if DataDir holds none, starts it unless it is already
// running (a live postmaster in DataDir is reused and StartedHere reports false; with
// Exclusive it is taken over instead), waits until it accepts connections and creates
// Options.Database.
//
// initdb runs in a temporary sibling directory that is renamed into place only when
// complete, so an interrupted first start never leaves a data directory that breaks the
// next one. If PostgreSQL is not installed, Start returns ErrNotInstalled itself; with
// Exclusive, if another process holds the data directory, an *InUseError.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.DataDir == "" {
		return nil, errors.New("pgcluster: Options.DataDir is required")
	}
	dataDir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	if opts.Database == "" {
		opts.Database = "entityd"
	}
	if opts.Port < 0 || opts.Port > 65535 {
		return nil, fmt.Errorf("pgcluster: invalid port %d", opts.Port)
	}
	for k := range opts.Settings {
		if !settingName.MatchString(k) {
			return nil, fmt.Errorf("pgcluster: invalid setting name %q", k)
		}
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	binDir, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	su, err := lookupServerUser()
	if err != nil {
		return nil, err
	}
	opts.Logger = log
	c := &Cluster{dataDir: dataDir, binDir: binDir, database: opts.Database, log: log, user: su,
		opts: opts, socketOnly: opts.SocketOnly}
	if opts.SocketOnly {
		if c.socketDir, err = socketDirFor(dataDir); err != nil {
			return nil, err
		}
	}

	parent := filepath.Dir(dataDir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	if opts.Exclusive {
		if err := c.lock(opts.DataDir); err != nil {
			return nil, err
		}
	}
	if err := c.open(ctx, opts); err != nil {
		c.unlock()
		return nil, err
	}
	if opts.Exclusive {
		c.startSupervisor()
	}
	return c, nil
}

// open is Start after the data directory is locked (if Exclusive).
func (c *Cluster) open(ctx context.Context, opts Options) error {
	if err := c.user.checkReachable(filepath.Dir(c.dataDir)); err != nil {
		return err
	}
	c.removeStaleInitDirs()
	if !fileExists(filepath.Join(c.dataDir, "PG_VERSION")) {
		if err := c.initdb(ctx, opts); err != nil {
			return err
		}
	}
	if err := c.user.chownTree(c.dataDir); err != nil {
		return fmt.Errorf("pgcluster: hand %s to the postgres OS user: %w", c.dataDir, err)
	}
	if err := c.ensureInclude(c.dataDir); err != nil {
		return err
	}

	running, err := c.running(ctx)
	if err != nil {
		return err
	}
	if running && opts.Exclusive {
		if err := c.takeOver(ctx); err != nil {
			return err
		}
		running = false
	}
	if running {
		err = c.reuse(opts)
	} else {
		err = c.start(ctx, opts)
	}
	if err != nil {
		return err
	}
	if err := c.waitReady(ctx); err != nil {
		c.abort()
		return err
	}
	if err := c.createDatabase(ctx); err != nil {
		c.abort()
		return err
	}
	return nil
}

// URL is the DSN of Options.Database: postgres://postgres@127.0.0.1:<port>/<db>?sslmode=disable,
// or for a SocketOnly cluster postgres://postgres@/<db>?host=<socket dir>&port=<port>&sslmode=disable.
func (c *Cluster) URL() string { return c.urlFor(c.database) }

// AdminURL is the DSN of the "postgres" maintenance database.
func (c *Cluster) AdminURL() string { return c.urlFor("postgres") }

func (c *Cluster) urlFor(db string) string {
	if c.socketOnly {
		return socketURL(c.socketDir, c.port, db)
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, url.PathEscape(db))
}

// Port is the TCP port the server listens on (127.0.0.1); for a SocketOnly cluster,
// the number in the name of its socket file (.s.PGSQL.<port>).
func (c *Cluster) Port() int { return c.port }

// SocketDir is the directory of a SocketOnly cluster's Unix socket ("" otherwise).
func (c *Cluster) SocketDir() string { return c.socketDir }

// DataDir is the absolute path of the data directory.
func (c *Cluster) DataDir() string { return c.dataDir }

// StartedHere reports whether this Start launched the server (false when it reused one
// that was already running). Only a cluster started here is stopped by Stop.
func (c *Cluster) StartedHere() bool { return c.startedHere }

// Stop shuts the server down (pg_ctl stop -m fast) if this process started it; for a
// reused server it does nothing. An Exclusive cluster's supervisor is ended first, and
// its lock released once the server is down. It is idempotent.
func (c *Cluster) Stop(ctx context.Context) error {
	c.stopSupervisor()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	if !c.startedHere {
		c.stopped = true
		c.unlock()
		return nil
	}
	began := time.Now()
	if _, err := c.run(ctx, "pg_ctl", "stop", "-D", c.dataDir, "-m", "fast", "-w", "-t", timeoutSecs(ctx), "-s"); err != nil {
		if running, serr := c.running(context.WithoutCancel(ctx)); serr != nil || running {
			return err
		}
	}
	// pg_ctl returns once postmaster.pid is gone, which the postmaster removes just
	// before it exits: wait for the process itself, so that nothing of this server is
	// left when the data directory's lock is released.
	c.waitExited(ctx, c.pid)
	c.stopped = true
	if c.disarm != nil {
		c.disarm()
		c.disarm = nil
	}
	c.removeSocketDir()
	c.unlock()
	c.log.Info("stopped PostgreSQL", zap.String("data_dir", c.dataDir), zap.Int("port", c.port), zap.Duration("took", time.Since(began)))
	return nil
}

// waitExited waits (at most 10 s, or until ctx ends) for the process pid to have exited.
func (c *Cluster) waitExited(ctx context.Context, pid int) {
	deadline := time.Now().Add(10 * time.Second)
	for !processExited(pid) && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
}

// StopOnExit arms a watchdog process for a cluster started here: if this process exits
// in any way (panic, os.Exit, SIGKILL) before Stop, the watchdog shuts the server down in
// immediate mode and then removes removeDir (if not empty; typically the temporary
// directory holding a throwaway cluster). Stop disarms it, and so does the returned
// function, which leaves the server running after this process exits.
func (c *Cluster) StopOnExit(removeDir string) (disarm func(), err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.startedHere || c.stopped {
		return nil, errors.New("pgcluster: StopOnExit needs a running cluster started by this process")
	}
	if c.disarm != nil {
		return nil, errors.New("pgcluster: StopOnExit already armed")
	}
	pid, _, err := readPostmasterPID(c.dataDir)
	if err != nil {
		return nil, err
	}
	if removeDir != "" {
		if removeDir, err = filepath.Abs(removeDir); err != nil {
			return nil, err
		}
	}
	d, err := startReaper(pid, c.dataDir, removeDir)
	if err != nil {
		return nil, err
	}
	c.disarm = sync.OnceFunc(d)
	c.reaperDir = removeDir
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.disarm != nil {
			c.disarm()
			c.disarm = nil
		}
	}, nil
}

// MkdirTemp is os.MkdirTemp for a directory that will hold a cluster's data directory:
// when this process is root, the new directory is handed to the postgres OS user (a
// fresh temporary directory is mode 0700, which the server could not otherwise enter).
func MkdirTemp(dir, pattern string) (string, error) {
	su, err := lookupServerUser()
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	if err := su.chown(tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return "", err
	}
	return tmp, nil
}

// initdb creates the cluster in a temporary sibling of the data directory and renames it
// into place once complete.
func (c *Cluster) initdb(ctx context.Context, opts Options) error {
	entries, err := os.ReadDir(c.dataDir)
	switch {
	case err == nil && len(entries) > 0:
		return fmt.Errorf("pgcluster: %s is not empty and is not a PostgreSQL data directory (no PG_VERSION); remove it or choose another directory", c.dataDir)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("pgcluster: %w", err)
	}
	began := time.Now()
	tmp := filepath.Join(filepath.Dir(c.dataDir), fmt.Sprintf(".%s.initdb-%d-%s", filepath.Base(c.dataDir), os.Getpid(), randHex(4)))
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	renamed := false
	defer func() {
		if !renamed {
			_ = os.RemoveAll(tmp)
		}
	}()
	if err := c.user.chown(tmp); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	args := []string{"-D", tmp, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C"}
	if !opts.Fsync {
		args = append(args, "--no-sync")
	}
	if _, err := c.run(ctx, "initdb", args...); err != nil {
		return err
	}
	port := opts.Port
	if port == 0 {
		if port, err = freePort(); err != nil {
			return err
		}
	}
	if err := c.writeFile(filepath.Join(tmp, portFileName), strconv.Itoa(port)+"\n"); err != nil {
		return err
	}
	if err := c.ensureInclude(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, c.dataDir); err != nil {
		if fileExists(filepath.Join(c.dataDir, "PG_VERSION")) {
			c.log.Info("PostgreSQL cluster was initialized concurrently by another process; using it", zap.String("data_dir", c.dataDir))
			return nil
		}
		return fmt.Errorf("pgcluster: move the new cluster into place (is %s a mount point? use a directory inside it): %w", c.dataDir, err)
	}
	renamed = true
	c.log.Info("initialized PostgreSQL cluster", zap.String("data_dir", c.dataDir), zap.Int("port", port),
		zap.String("bin_dir", c.binDir), zap.Duration("took", time.Since(began)))
	return nil
}

// removeStaleInitDirs deletes temporary initdb directories left by crashed processes.
func (c *Cluster) removeStaleInitDirs() {
	prefix := "." + filepath.Base(c.dataDir) + ".initdb-"
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(c.dataDir), prefix+"*"))
	for _, m := range matches {
		rest := strings.TrimPrefix(filepath.Base(m), prefix)
		pidStr, _, _ := strings.Cut(rest, "-")
		if pid, err := strconv.Atoi(pidStr); err == nil && processAlive(pid) {
			continue
		}
		if err := os.RemoveAll(m); err == nil {
			c.log.Info("removed an interrupted initdb directory", zap.String("path", m))
		}
	}
}

// ensureInclude makes dir's postgresql.conf include entityd.conf.
func (c *Cluster) ensureInclude(dir string) error {
	path := filepath.Join(dir, "postgresql.conf")
	conf, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if bytes.Contains(conf, []byte(includeLine)) {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	_, err = fmt.Fprintf(f, "\n# Settings managed by entityd (internal/pgcluster), rewritten at every start.\n%s\n", includeLine)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	return nil
}

// DefaultSettings are set on every cluster unless Options.Settings says otherwise:
// logical decoding for pgSync observations (package pgsync: a replication slot and its
// walsender), with the WAL a slot may hold back bounded while no entityd streams from it.
var DefaultSettings = map[string]string{
	"wal_level":              "logical",
	"max_replication_slots":  "10",
	"max_wal_senders":        "10",
	"max_slot_wal_keep_size": "1GB",
}

func (c *Cluster) writeConf(port int, opts Options) error {
	var b strings.Builder
	b.WriteString("# Written by entityd (internal/pgcluster) at every start: edits are overwritten.\n")
	b.WriteString("# Use ALTER SYSTEM (postgresql.auto.conf) for settings of your own.\n")
	set := func(k, v string) {
		v = strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(v)
		fmt.Fprintf(&b, "%s = '%s'\n", k, v)
	}
	if !c.socketOnly {
		set("listen_addresses", "127.0.0.1")
		set("port", strconv.Itoa(port))
		set("unix_socket_directories", "")
	}
	if !opts.Fsync {
		set("fsync", "off")
		set("synchronous_commit", "off")
		set("full_page_writes", "off")
	}
	settings := maps.Clone(DefaultSettings)
	maps.Copy(settings, opts.Settings)
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		set(k, settings[k])
	}
	if c.socketOnly { // last, so that no setting above overrides the lockdown
		set("listen_addresses", "")
		set("port", strconv.Itoa(port))
		set("unix_socket_directories", c.socketDir)
		set("unix_socket_permissions", "0700")
	}
	return c.writeFile(filepath.Join(c.dataDir, confFileName), b.String())
}

// writeFile replaces path atomically (a server starting concurrently never reads half a
// file) with a file the server user owns.
func (c *Cluster) writeFile(path, content string) error {
	tmp := path + ".tmp-" + randHex(4)
	err := os.WriteFile(tmp, []byte(content), 0o600)
	if err == nil {
		err = c.user.chown(tmp)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("pgcluster: %w", err)
	}
	return nil
}

func (c *Cluster) readPortFile() int {
	b, err := os.ReadFile(filepath.Join(c.dataDir, portFileName))
	if err != nil {
		return 0
	}
	p, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || p <= 0 || p > 65535 {
		return 0
	}
	return p
}

// reuse adopts a server that is already running in the data directory.
func (c *Cluster) reuse(opts Options) error {
	pid, port, err := readPostmasterPID(c.dataDir)
	if err != nil {
		return err
	}
	if err := c.checkReusable(); err != nil {
		return err
	}
	c.port = port
	c.startedHere = false
	c.log.Info("reusing running PostgreSQL", zap.String("data_dir", c.dataDir), zap.Int("port", port), zap.Int("pid", pid))
	if opts.Port != 0 && opts.Port != port {
		c.log.Warn("running PostgreSQL listens on another port than requested", zap.Int("port", port), zap.Int("requested_port", opts.Port))
	}
	return nil
}

// start launches the server with pg_ctl.
func (c *Cluster) start(ctx context.Context, opts Options) error {
	auto := opts.Port == 0
	// The TCP port must be free; a SocketOnly cluster's port only names its socket file,
	// in a directory nobody else uses, so its remembered port is always kept.
	checkPort := !c.socketOnly
	port := opts.Port
	if auto {
		port = c.readPortFile()
		if port == 0 || (checkPort && !portFree(port)) {
			old := port
			var err error
			if port, err = freePort(); err != nil {
				return err
			}
			if old != 0 {
				c.log.Info("remembered PostgreSQL port is busy; picked another", zap.String("data_dir", c.dataDir), zap.Int("old_port", old), zap.Int("port", port))
			}
		}
	}
	for attempt := 1; ; attempt++ {
		if auto {
			if err := c.writeFile(filepath.Join(c.dataDir, portFileName), strconv.Itoa(port)+"\n"); err != nil {
				return err
			}
		}
		began := time.Now()
		err := c.launch(ctx, port)
		if err == nil {
			c.port = port
			c.startedHere = true
			if pid, _, perr := readPostmasterPID(c.dataDir); perr == nil {
				c.pid = pid
			}
			fields := []zap.Field{zap.String("data_dir", c.dataDir), zap.Int("port", port), zap.Int("pid", c.pid), zap.Duration("took", time.Since(began))}
			if c.socketOnly {
				fields = append(fields, zap.String("socket_dir", c.socketDir))
			}
			c.log.Info("started PostgreSQL", fields...)
			return nil
		}
		var notLaunched notLaunchedError
		if errors.As(err, &notLaunched) {
			return notLaunched.err
		}
		logPath := c.logPath()
		tail := logTail(logPath)
		if ctx.Err() == nil {
			if strings.Contains(tail, `lock file "postmaster.pid" already exists`) && !opts.Exclusive {
				// Another process started this data directory at the same time.
				if running, rerr := c.running(ctx); rerr == nil && running {
					return c.reuse(opts)
				}
				return fmt.Errorf("%w\nserver log %s ends with:\n%s", err, logPath, tail)
			}
			if auto && checkPort && attempt < 3 && !portFree(port) {
				old := port
				if port, err = freePort(); err != nil {
					return err
				}
				c.log.Warn("PostgreSQL port was taken while starting; retrying on another", zap.Int("old_port", old), zap.Int("port", port))
				continue
			}
		}
		// pg_ctl may have given up (timeout, cancelled context) while the postmaster lives on.
		c.port = port
		c.stopImmediate()
		return fmt.Errorf("%w\nserver log %s ends with:\n%s", err, logPath, tail)
	}
}

// notLaunchedError marks a launch that failed before running pg_ctl.
type notLaunchedError struct{ err error }

func (e notLaunchedError) Error() string { return e.err.Error() }
func (e notLaunchedError) Unwrap() error { return e.err }

// launch writes the settings (and, for a SocketOnly cluster, pg_hba.conf and the socket
// directory) for port and runs pg_ctl start, waiting until the server is ready.
func (c *Cluster) launch(ctx context.Context, port int) error {
	if err := c.writeConf(port, c.opts); err != nil {
		return notLaunchedError{err}
	}
	if c.socketOnly {
		if err := c.writeHBA(); err != nil {
			return notLaunchedError{err}
		}
		if err := c.prepareSocketDir(c.opts.Exclusive); err != nil {
			return notLaunchedError{err}
		}
	}
	logPath := c.logPath()
	if fi, err := os.Stat(logPath); err == nil && fi.Size() > maxLogSize {
		_ = os.Rename(logPath, logPath+".1")
	}
	_, err := c.run(ctx, "pg_ctl", "start", "-D", c.dataDir, "-l", logPath, "-w", "-t", timeoutSecs(ctx), "-s")
	return err
}

func (c *Cluster) logPath() string { return filepath.Join(c.dataDir, logFileName) }

// waitReady waits until the server accepts connections.
func (c *Cluster) waitReady(ctx context.Context) error {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	for {
		attemptCtx, cancelAttempt := context.WithTimeout(ctx, 5*time.Second)
		conn, err := pgx.Connect(attemptCtx, c.AdminURL())
		if err == nil {
			err = conn.Ping(attemptCtx)
			_ = conn.Close(context.WithoutCancel(attemptCtx))
		}
		cancelAttempt()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			where := fmt.Sprintf("127.0.0.1:%d", c.port)
			if c.socketOnly {
				where = fmt.Sprintf("its Unix socket in %s (port %d)", c.socketDir, c.port)
			}
			return fmt.Errorf("pgcluster: PostgreSQL in %s does not accept connections on %s: %w", c.dataDir, where, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *Cluster) createDatabase(ctx context.Context) error {
	if c.database == "postgres" {
		return nil
	}
	conn, err := pgx.Connect(ctx, c.AdminURL())
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", c.database).Scan(&exists); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if exists {
		return nil
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{c.database}.Sanitize()); err != nil {
		var pgErr *pgconn.PgError
		// Created concurrently: duplicate_database, or a unique violation on pg_database
		// when both CREATE DATABASE statements got past the existence check.
		if errors.As(err, &pgErr) && (pgErr.Code == "42P04" || pgErr.Code == "23505") {
			return nil
		}
		return fmt.Errorf("pgcluster: create database %q: %w", c.database, err)
	}
	c.log.Info("created database", zap.String("database", c.database), zap.Int("port", c.port))
	return nil
}

// abort stops a server this Start launched after a later step failed.
func (c *Cluster) abort() {
	if c.startedHere {
		c.stopImmediate()
	}
}

func (c *Cluster) stopImmediate() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = c.run(ctx, "pg_ctl", "stop", "-D", c.dataDir, "-m", "immediate", "-w", "-s")
}

// running reports whether a live postmaster owns the data directory (pg_ctl status, and
// the postmaster is not a zombie: pg_ctl counts one that exited and is not reaped yet).
func (c *Cluster) running(ctx context.Context) (bool, error) {
	_, err := c.run(ctx, "pg_ctl", "status", "-D", c.dataDir)
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		if pid, _, perr := readPostmasterPID(c.dataDir); perr == nil && !processAlive(pid) {
			return false, nil
		}
		return true, nil
	case errors.As(err, &exitErr) && exitErr.ExitCode() == 3: // not running
		return false, nil
	default:
		return false, err
	}
}

// run executes one of the PostgreSQL binaries (as the postgres OS user when we are root)
// and folds its combined output into the error on failure.
func (c *Cluster) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, name), args...)
	cmd.Dir = filepath.Dir(c.dataDir) // the server user may not be able to enter our working directory
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.WaitDelay = 5 * time.Second
	c.user.apply(cmd)
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String())
		if msg == "" {
			return out.Bytes(), fmt.Errorf("pgcluster: %s %s: %w", name, strings.Join(args, " "), err)
		}
		return out.Bytes(), fmt.Errorf("pgcluster: %s %s: %w: %s", name, strings.Join(args, " "), err, msg)
	}
	return out.Bytes(), nil
}

// readPostmasterPID returns the pid and port recorded in the data directory's
// postmaster.pid (lines 1 and 4).
func readPostmasterPID(dataDir string) (pid, port int, err error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, 0, fmt.Errorf("pgcluster: %w", err)
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) >= 4 {
		pid, err = strconv.Atoi(strings.TrimSpace(lines[0]))
		if err == nil {
			port, err = strconv.Atoi(strings.TrimSpace(lines[3]))
		}
		if err == nil && pid > 0 && port > 0 {
			return pid, port, nil
		}
	}
	return 0, 0, fmt.Errorf("pgcluster: cannot read pid and port from %s", filepath.Join(dataDir, "postmaster.pid"))
}

// logTail returns the last lines of the server log.
func logTail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "(no server log: " + err.Error() + ")"
	}
	defer f.Close()
	const max = 8 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		_, _ = f.Seek(-max, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 25 {
		lines = lines[len(lines)-25:]
	}
	return strings.Join(lines, "\n")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgcluster: pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// timeoutSecs is pg_ctl's -t: the time left before ctx's deadline, or defaultTimeout.
func timeoutSecs(ctx context.Context) string {
	d := defaultTimeout
	if dl, ok := ctx.Deadline(); ok {
		d = time.Until(dl)
	}
	return strconv.Itoa(max(1, int((d+time.Second-1)/time.Second)))
}

func withDefaultTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, defaultTimeout)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
