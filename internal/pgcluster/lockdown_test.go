package pgcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/entityd/entityd/internal/testwait"
)

// The options of the embedded server database.
func lockedOpts(dataDir string) Options {
	return Options{DataDir: dataDir, SocketOnly: true, Exclusive: true}
}

// observed returns a logger that writes to the test log and records every entry.
func observed(t *testing.T) (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.DebugLevel)
	return zap.New(zapcore.NewTee(zaptest.NewLogger(t).Core(), core)), logs
}

func postmasterOf(t *testing.T, dataDir string) int {
	t.Helper()
	pid, _, err := readPostmasterPID(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// killPostmasterAtCleanup makes sure no server of dataDir outlives the test, whoever
// started it: an immediate shutdown (SIGQUIT), then SIGKILL.
func killPostmasterAtCleanup(t *testing.T, dataDir string) {
	t.Cleanup(func() {
		pid, _, err := readPostmasterPID(dataDir)
		if err != nil || !processAlive(pid) {
			return
		}
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && !strings.HasPrefix(string(comm), "postgres") {
			return // a stale postmaster.pid whose pid now names another process
		}
		_ = syscall.Kill(pid, syscall.SIGQUIT)
		defer func() { // also when the wait below fails the test
			if processAlive(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}()
		testwait.Until(t, "a left-over postmaster to quit on SIGQUIT", func() bool { return !processAlive(pid) }, 15*time.Second)
	})
}

// requireNoSupervisor fails if a supervisor goroutine is still running.
func requireNoSupervisor(t *testing.T) {
	t.Helper()
	// A goroutine that returned may still be on its way out.
	testwait.Until(t, "the supervisor goroutine to return after Stop", func() bool {
		buf := make([]byte, 1<<20)
		return !strings.Contains(string(buf[:runtime.Stack(buf, true)]), "pgcluster.(*Cluster).supervise")
	}, time.Second)
}

// tcpListeners returns the TCP sockets in LISTEN state that process pid holds open.
func tcpListeners(t *testing.T, pid int) []string {
	t.Helper()
	listening := map[string]string{} // socket inode -> local address
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 9 && fields[3] == "0A" { // st == TCP_LISTEN
				listening[fields[9]] = fields[1]
			}
		}
		f.Close()
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("list the postmaster's descriptors: %v", err)
	}
	var out []string
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err != nil {
			continue
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok {
			if addr, ok := listening[strings.TrimSuffix(inode, "]")]; ok {
				out = append(out, addr)
			}
		}
	}
	return out
}

func hbaHostLines(t *testing.T, dataDir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "pg_hba.conf"))
	if err != nil {
		t.Fatal(err)
	}
	var hosts []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "host") {
			hosts = append(hosts, line)
		}
	}
	return hosts
}

// requireLockedDown checks everything a SocketOnly cluster promises.
func requireLockedDown(t *testing.T, c *Cluster) {
	t.Helper()
	cfg, err := pgconn.ParseConfig(c.URL())
	if err != nil {
		t.Fatalf("pgx cannot parse %s: %v", c.URL(), err)
	}
	if cfg.Host != c.SocketDir() || int(cfg.Port) != c.Port() || cfg.User != "postgres" || cfg.Database != c.database {
		t.Fatalf("URL %s parses to host %q port %d user %q database %q", c.URL(), cfg.Host, cfg.Port, cfg.User, cfg.Database)
	}
	if got := query(t, c.URL(), "SHOW listen_addresses"); got != "" {
		t.Fatalf("listen_addresses = %q", got)
	}
	if got := query(t, c.URL(), "SHOW unix_socket_permissions"); got != "0700" {
		t.Fatalf("unix_socket_permissions = %q", got)
	}
	if got := query(t, c.URL(), "SELECT current_database()"); got != c.database {
		t.Fatalf("current_database() = %q", got)
	}
	// No TCP: not on 127.0.0.1 at its port, and no listening TCP socket at all.
	if accepting(c.Port()) {
		t.Fatalf("something accepts TCP connections on 127.0.0.1:%d", c.Port())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=3", c.Port())); err == nil {
		conn.Close(ctx)
		t.Fatal("connected over TCP")
	}
	if _, err := os.Stat("/proc/net/tcp"); err == nil {
		if l := tcpListeners(t, postmasterOf(t, c.DataDir())); len(l) > 0 {
			t.Fatalf("the postmaster listens on TCP: %v", l)
		}
	}
	if hosts := hbaHostLines(t, c.DataDir()); len(hosts) > 0 {
		t.Fatalf("pg_hba.conf has host lines: %q", hosts)
	}
	// The socket directory is 0700 and belongs to the cluster's OS user; so does the socket.
	fi, err := os.Lstat(c.SocketDir())
	if err != nil {
		t.Fatal(err)
	}
	if !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("socket directory %s: mode %v, want a 0700 directory", c.SocketDir(), fi.Mode())
	}
	if uid, _ := fileOwner(fi); uid != c.user.uidOrSelf() {
		t.Fatalf("socket directory owned by uid %d, want %d", uid, c.user.uidOrSelf())
	}
	sock, err := os.Lstat(filepath.Join(c.SocketDir(), ".s.PGSQL."+strconv.Itoa(c.Port())))
	if err != nil {
		t.Fatal(err)
	}
	if sock.Mode()&os.ModeSocket == 0 || sock.Mode().Perm() != 0o700 {
		t.Fatalf("socket file mode %v, want a 0700 socket", sock.Mode())
	}
	// A pool works over the socket.
	pool, err := pgxpool.New(ctx, c.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("pool over the socket: %v", err)
	}
}

func TestSocketOnlyLockdown(t *testing.T) {
	dataDir := filepath.Join(newDir(t), "data")
	killPostmasterAtCleanup(t, dataDir)
	c := start(t, lockedOpts(dataDir))
	if c.SocketDir() != dataDir {
		t.Fatalf("socket dir %s, want the data directory %s (the path is short)", c.SocketDir(), dataDir)
	}
	requireLockedDown(t, c)
	port := c.Port()
	stop(t, c)
	requireNoSupervisor(t)
	if _, err := os.Lstat(filepath.Join(dataDir, ".s.PGSQL."+strconv.Itoa(port))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket file left after Stop: %v", err)
	}

	// The next start keeps the port (it only names the socket) and the lockdown.
	c = start(t, lockedOpts(dataDir))
	if c.Port() != port {
		t.Fatalf("port %d after restart, want the remembered %d", c.Port(), port)
	}
	requireLockedDown(t, c)
	stop(t, c)
	requireNoSupervisor(t)
}

func TestSocketDirInTempForLongDataDir(t *testing.T) {
	dataDir := filepath.Join(newDir(t), strings.Repeat("d", 60), strings.Repeat("e", 40), "data")
	killPostmasterAtCleanup(t, dataDir)
	want, err := socketDirFor(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if want == dataDir || filepath.Dir(want) != filepath.Clean(os.TempDir()) {
		t.Fatalf("socket dir %s for a data dir of %d bytes, want one in %s", want, len(dataDir), os.TempDir())
	}
	// Whatever is there is replaced by a fresh 0700 directory.
	if err := os.MkdirAll(want, 0o777); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(want) })
	if err := os.Chmod(want, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(want, "planted"), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	c := start(t, lockedOpts(dataDir))
	if c.SocketDir() != want {
		t.Fatalf("socket dir %s, want %s", c.SocketDir(), want)
	}
	if _, err := os.Stat(filepath.Join(want, "planted")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the socket directory was not recreated: %v", err)
	}
	requireLockedDown(t, c)
	stop(t, c)
	if _, err := os.Stat(want); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket directory left after Stop: %v", err)
	}
}

// Without Exclusive, SocketOnly clusters are shared like TCP ones.
func TestSocketOnlySharedStart(t *testing.T) {
	dataDir := filepath.Join(newDir(t), "data")
	killPostmasterAtCleanup(t, dataDir)
	c1 := start(t, Options{DataDir: dataDir, SocketOnly: true})
	c2 := start(t, Options{DataDir: dataDir, SocketOnly: true, Database: "other"})
	if c2.StartedHere() || c2.URL() == c1.URL() || c2.SocketDir() != c1.SocketDir() {
		t.Fatalf("second Start: started here %v, URL %s (first %s)", c2.StartedHere(), c2.URL(), c1.URL())
	}
	if got := query(t, c2.URL(), "SELECT current_database()"); got != "other" {
		t.Fatalf("current_database() = %q", got)
	}
	// A TCP Start does not silently reuse a socket-only server.
	_, err := Start(testCtx(t), Options{DataDir: dataDir})
	if err == nil || !strings.Contains(err.Error(), "does not listen on TCP") {
		t.Fatalf("TCP Start on a socket-only server: %v", err)
	}
	stop(t, c2)
	stop(t, c1)
}

func TestInUseErrorMessage(t *testing.T) {
	err := error(&InUseError{DataDir: "./.entityd/pg", PID: 1234})
	want := "embedded PostgreSQL data directory ./.entityd/pg is in use by another entityd (pid 1234); to run several servers, start PostgreSQL yourself and give each server the same DATABASE_URL"
	if err.Error() != want {
		t.Fatalf("message:\n%s\nwant:\n%s", err, want)
	}
	if !errors.Is(fmt.Errorf("embedded Postgres: %w", err), ErrInUse) {
		t.Fatal("errors.Is(wrapped, ErrInUse) is false")
	}
	if msg := (&InUseError{DataDir: "a\nb"}).Error(); strings.Contains(msg, "\n") || strings.Contains(msg, "pid") {
		t.Fatalf("message %q", msg)
	}
}

func TestExclusiveSecondStartFails(t *testing.T) {
	dataDir := filepath.Join(newDir(t), "data")
	killPostmasterAtCleanup(t, dataDir)
	c1 := start(t, lockedOpts(dataDir))

	began := time.Now()
	c2, err := Start(testCtx(t), Options{DataDir: dataDir, SocketOnly: true, Exclusive: true, Logger: zaptest.NewLogger(t)})
	took := time.Since(began)
	if err == nil {
		_ = c2.Stop(context.Background())
		t.Fatal("second exclusive Start succeeded")
	}
	var inUse *InUseError
	if !errors.Is(err, ErrInUse) || !errors.As(err, &inUse) {
		t.Fatalf("err = %v (%T), want an *InUseError", err, err)
	}
	if inUse.PID != os.Getpid() || inUse.DataDir != dataDir {
		t.Fatalf("InUseError %+v, want pid %d and data dir %s", inUse, os.Getpid(), dataDir)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "DATABASE_URL") || !strings.Contains(msg, dataDir) ||
		!strings.Contains(msg, fmt.Sprintf("(pid %d)", os.Getpid())) {
		t.Fatalf("message %q: want one line naming the directory, the pid and DATABASE_URL", msg)
	}
	if took > 2*time.Second {
		t.Fatalf("the second Start took %v to fail, want at once", took)
	}
	t.Logf("second Start failed after %v: %s", took.Round(time.Microsecond), msg)
	// The first one is untouched.
	if got := query(t, c1.URL(), "SELECT 'still here'"); got != "still here" {
		t.Fatal(got)
	}
	stop(t, c1)
	requireNoSupervisor(t)

	// Stop released the lock.
	c3 := start(t, lockedOpts(dataDir))
	stop(t, c3)
	requireNoSupervisor(t)
}

func TestSupervisorRestartsKilledPostmaster(t *testing.T) {
	dataDir := filepath.Join(newDir(t), "data")
	killPostmasterAtCleanup(t, dataDir)
	log, logs := observed(t)
	opts := lockedOpts(dataDir)
	opts.Fsync = true
	opts.Logger = log
	c := start(t, opts)

	ctx := testCtx(t)
	pool, err := pgxpool.New(ctx, c.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, "CREATE TABLE kept (n int)"); err != nil {
		t.Fatal(err)
	}
	for i := range 50 { // 50 separate committed transactions
		if _, err := pool.Exec(ctx, "INSERT INTO kept VALUES ($1)", i); err != nil {
			t.Fatal(err)
		}
	}
	// Keep a few connections open through the crash: their backends become orphans
	// that must exit before PostgreSQL can start again.
	conns := make([]*pgxpool.Conn, 3)
	for i := range conns {
		if conns[i], err = pool.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, conn := range conns {
		conn.Release()
	}

	oldPID := postmasterOf(t, dataDir)
	if err := syscall.Kill(oldPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	noticed := testwait.Until(t, "the supervisor logs the crash", func() bool {
		return logs.FilterMessage("embedded PostgreSQL exited unexpectedly; restarting").Len() > 0
	}, 5*time.Second)
	back := testwait.Until(t, "the supervisor restarts PostgreSQL", func() bool {
		return logs.FilterMessage("embedded PostgreSQL restarted").Len() > 0
	}, 20*time.Second)
	newPID := postmasterOf(t, dataDir)
	if newPID == oldPID || !processAlive(newPID) {
		t.Fatalf("postmaster pid %d after restart (killed %d)", newPID, oldPID)
	}
	crash := logs.FilterMessage("embedded PostgreSQL exited unexpectedly; restarting").All()
	if len(crash) != 1 || crash[0].Level != zapcore.ErrorLevel || crash[0].ContextMap()["pid"] != int64(oldPID) {
		t.Fatalf("crash log entries: %+v", crash)
	}
	restarted := logs.FilterMessage("embedded PostgreSQL restarted").All()[0].ContextMap()
	t.Logf("crash noticed after %v; back after %v more (%v attempts, downtime %v)",
		noticed.Round(time.Millisecond), back.Round(time.Millisecond), restarted["attempts"], restarted["downtime"])
	if noticed > 2*time.Second {
		t.Errorf("the crash was noticed after %v, want about a second", noticed)
	}

	// The pool made before the kill works again by itself, and every commit survived.
	var n int
	testwait.Until(t, "the old pool works again", func() bool {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return pool.QueryRow(qctx, "SELECT count(*) FROM kept").Scan(&n) == nil
	}, 20*time.Second)
	if n != 50 {
		t.Fatalf("%d rows after the crash, want 50", n)
	}
	requireLockedDown(t, c)

	pool.Close()
	stop(t, c)
	requireNoSupervisor(t)
	if processAlive(newPID) {
		t.Fatal("the restarted postmaster survived Stop")
	}
	if n := logs.FilterMessage("embedded PostgreSQL exited unexpectedly; restarting").Len(); n != 1 {
		t.Fatalf("%d crash entries: Stop was taken for a crash", n)
	}
}

// Stop while the postmaster is down and restarts keep failing ends the supervisor.
func TestStopDuringOutage(t *testing.T) {
	dataDir := filepath.Join(newDir(t), "data")
	killPostmasterAtCleanup(t, dataDir)
	log, logs := observed(t)
	opts := lockedOpts(dataDir)
	opts.Logger = log
	c := start(t, opts)
	// Make every restart fail: a postgresql.conf PostgreSQL cannot parse.
	conf := filepath.Join(dataDir, "postgresql.conf")
	orig, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, append(orig, []byte("\nthis is not a setting\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(postmasterOf(t, dataDir), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "two failed restart attempts", func() bool {
		return logs.FilterMessage("embedded PostgreSQL did not restart; retrying").Len() >= 2
	}, 15*time.Second)
	stop(t, c)
	requireNoSupervisor(t)
	if n := logs.FilterMessage("embedded PostgreSQL exited unexpectedly; restarting").Len(); n != 1 {
		t.Fatalf("%d crash entries, want 1 per outage", n)
	}
}

// TestOrphanIsTakenOver: a process that started an exclusive cluster is SIGKILLed, which
// leaves its server running; the next exclusive Start takes it over and owns it.
func TestOrphanIsTakenOver(t *testing.T) {
	if dir := os.Getenv("PGCLUSTER_TEST_ORPHAN_DIR"); dir != "" {
		c, err := Start(context.Background(), lockedOpts(dir))
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(3)
		}
		pid, _, _ := readPostmasterPID(c.DataDir())
		fmt.Println("postmaster", pid)
		// Until SIGKILLed; or, should the test die first, until its end of stdin closes.
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(3)
	}
	dataDir := filepath.Join(newDir(t), "data")
	killPostmasterAtCleanup(t, dataDir)
	cmd := exec.Command(os.Args[0], "-test.run=^TestOrphanIsTakenOver$")
	cmd.Env = append(os.Environ(), "PGCLUSTER_TEST_ORPHAN_DIR="+dataDir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe() // held open: the helper lives until it is killed
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); _ = stdin.Close() })
	orphan := 0
	sc := bufio.NewScanner(out)
	for orphan == 0 && sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "postmaster "); ok {
			orphan, _ = strconv.Atoi(p)
		} else if strings.HasPrefix(sc.Text(), "error:") {
			t.Fatal(sc.Text())
		}
	}
	if orphan == 0 {
		t.Fatal("the helper did not start a cluster")
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !processAlive(orphan) {
		t.Fatal("the server died with its owner; nothing to take over")
	}

	log, logs := observed(t)
	opts := lockedOpts(dataDir)
	opts.Logger = log
	c := start(t, opts)
	took := logs.FilterMessage("took over an orphaned embedded PostgreSQL").All()
	if len(took) != 1 || took[0].ContextMap()["pid"] != int64(orphan) {
		t.Fatalf("takeover log entries: %+v", took)
	}
	if processAlive(orphan) {
		t.Fatalf("the orphaned postmaster %d still runs", orphan)
	}
	ours := postmasterOf(t, dataDir)
	if ours == orphan || !c.StartedHere() {
		t.Fatalf("postmaster %d (orphan %d), started here %v", ours, orphan, c.StartedHere())
	}
	requireLockedDown(t, c)
	stop(t, c)
	requireNoSupervisor(t)
	if processAlive(ours) || fileExists(filepath.Join(dataDir, "postmaster.pid")) {
		t.Fatal("the server outlived Stop")
	}
}

// A cluster made and left running by an older entityd (TCP on 127.0.0.1, host lines in
// pg_hba.conf, no lock) is taken over and converted, keeping its data.
func TestTakeOverConvertsTCPCluster(t *testing.T) {
	dataDir := filepath.Join(newDir(t), "data")
	killPostmasterAtCleanup(t, dataDir)
	old, err := Start(testCtx(t), Options{DataDir: dataDir, Database: "entityd", Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	exec1(t, old.URL(), "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('from the old days')")
	if len(hbaHostLines(t, dataDir)) == 0 || !accepting(old.Port()) {
		t.Fatal("the old-style cluster should accept TCP")
	}
	orphan := postmasterOf(t, dataDir)
	// The owner "dies": no Stop.

	log, logs := observed(t)
	opts := lockedOpts(dataDir)
	opts.Database = "entityd"
	opts.Logger = log
	c := start(t, opts)
	if logs.FilterMessage("took over an orphaned embedded PostgreSQL").Len() != 1 || processAlive(orphan) {
		t.Fatal("the running old-style server was not taken over")
	}
	if c.Port() != old.Port() {
		t.Fatalf("port %d, want the remembered %d", c.Port(), old.Port())
	}
	requireLockedDown(t, c)
	if got := query(t, c.URL(), "SELECT v FROM kept"); got != "from the old days" {
		t.Fatalf("data: %q", got)
	}
	conf, err := os.ReadFile(filepath.Join(dataDir, confFileName))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(conf), "127.0.0.1") {
		t.Fatalf("entityd.conf still has TCP settings:\n%s", conf)
	}
	stop(t, c)
	requireNoSupervisor(t)
}

// An armed StopOnExit watchdog is moved to the restarted postmaster.
func TestStopOnExitFollowsRestart(t *testing.T) {
	dataDir := filepath.Join(newDir(t), "data")
	killPostmasterAtCleanup(t, dataDir)
	log, logs := observed(t)
	opts := lockedOpts(dataDir)
	opts.Logger = log
	c := start(t, opts)
	if _, err := c.StopOnExit(""); err != nil {
		t.Fatal(err)
	}
	old := postmasterOf(t, dataDir)
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the supervisor restarts PostgreSQL", func() bool {
		return logs.FilterMessage("embedded PostgreSQL restarted").Len() > 0
	}, 20*time.Second)
	c.mu.Lock()
	pid, armed := c.pid, c.disarm != nil
	c.mu.Unlock()
	if pid == old || pid != postmasterOf(t, dataDir) || !armed {
		t.Fatalf("after the restart: recorded pid %d (killed %d), watchdog armed %v", pid, old, armed)
	}
	stop(t, c)
	requireNoSupervisor(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.disarm != nil {
		t.Fatal("Stop left the watchdog armed")
	}
}
