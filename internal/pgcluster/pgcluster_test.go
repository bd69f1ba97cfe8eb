package pgcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap/zaptest"

	"github.com/entityd/entityd/internal/testwait"
)

// newDir returns a fresh directory the server can use (owned by postgres when we are root).
func newDir(t *testing.T) string {
	t.Helper()
	dir, err := MkdirTemp("", "pgcluster-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func start(t *testing.T, opts Options) *Cluster {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = zaptest.NewLogger(t)
	}
	began := time.Now()
	c, err := Start(testCtx(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Start took %v (started here: %v, port %d)", time.Since(began).Round(time.Millisecond), c.StartedHere(), c.Port())
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	return c
}

func stop(t *testing.T, c *Cluster) {
	t.Helper()
	began := time.Now()
	if err := c.Stop(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	t.Logf("Stop took %v", time.Since(began).Round(time.Millisecond))
}

func query(t *testing.T, dsn, sql string, args ...any) string {
	t.Helper()
	ctx := testCtx(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var out string
	if err := conn.QueryRow(ctx, sql, args...).Scan(&out); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

func exec1(t *testing.T, dsn, sql string) {
	t.Helper()
	ctx := testCtx(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func accepting(port int) bool {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

func TestFindBinaries(t *testing.T) {
	dir, err := FindBinaries()
	if err != nil {
		t.Fatal(err) // the test suite needs PostgreSQL: not installed is a failure, not a skip
	}
	for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("FindBinaries() = %s without %s", dir, name)
		}
	}
}

func fakeInstall(t *testing.T, dir string, names ...string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFindBinariesPicksHighestCompleteVersion(t *testing.T) {
	t.Setenv("PATH", "") // no pg_config, no initdb on $PATH
	root := t.TempDir()
	fakeInstall(t, filepath.Join(root, "9.6", "bin"), "initdb", "pg_ctl", "postgres")
	fakeInstall(t, filepath.Join(root, "15", "bin"), "initdb", "pg_ctl", "postgres")
	fakeInstall(t, filepath.Join(root, "16", "bin"), "psql") // client only
	dir, err := findBinaries(root)
	if err != nil || dir != filepath.Join(root, "15", "bin") {
		t.Fatalf("findBinaries = %q, %v; want the 15 install", dir, err)
	}
}

func TestErrNotInstalled(t *testing.T) {
	t.Setenv("PATH", "")
	_, err := findBinaries(t.TempDir())
	if !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("err = %v, want ErrNotInstalled", err)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "apt-get install -y postgresql") {
		t.Fatalf("message %q should be one line naming the install command", msg)
	}
}

func TestStartStopRestart(t *testing.T) {
	dataDir := filepath.Join(newDir(t), "data")
	c := start(t, Options{DataDir: dataDir, Database: "appdb"})
	if !c.StartedHere() {
		t.Fatal("first Start did not start the server")
	}
	if want := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/appdb?sslmode=disable", c.Port()); c.URL() != want {
		t.Fatalf("URL() = %s, want %s", c.URL(), want)
	}
	if !strings.HasSuffix(strings.SplitN(c.AdminURL(), "?", 2)[0], "/postgres") {
		t.Fatalf("AdminURL() = %s", c.AdminURL())
	}
	if got := query(t, c.URL(), "SELECT current_database()"); got != "appdb" {
		t.Fatalf("current_database() = %s", got)
	}
	if got := query(t, c.URL(), "SHOW fsync"); got != "off" {
		t.Fatalf("fsync = %s for a Fsync:false cluster", got)
	}
	if got := query(t, c.URL(), "SHOW listen_addresses"); got != "127.0.0.1" {
		t.Fatalf("listen_addresses = %s", got)
	}
	exec1(t, c.URL(), "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('survives restart')")
	port := c.Port()

	stop(t, c)
	if accepting(port) {
		t.Fatal("server still accepts connections after Stop")
	}
	if err := c.Stop(testCtx(t)); err != nil {
		t.Fatalf("second Stop: %v", err)
	}

	c2 := start(t, Options{DataDir: dataDir, Database: "appdb", Fsync: true, Settings: map[string]string{"max_connections": "42"}})
	if !c2.StartedHere() || c2.Port() != port {
		t.Fatalf("restart: started here %v, port %d; want true, %d", c2.StartedHere(), c2.Port(), port)
	}
	if got := query(t, c2.URL(), "SELECT v FROM kept"); got != "survives restart" {
		t.Fatalf("data after restart: %q", got)
	}
	if got := query(t, c2.URL(), "SHOW fsync"); got != "on" {
		t.Fatalf("fsync = %s for a Fsync:true start", got)
	}
	if got := query(t, c2.URL(), "SHOW max_connections"); got != "42" {
		t.Fatalf("max_connections = %s", got)
	}
	// logical decoding for pgSync observations, on every cluster unless told otherwise
	if got := query(t, c2.URL(), "SHOW wal_level"); got != "logical" {
		t.Fatalf("wal_level = %s", got)
	}
	if got := query(t, c2.URL(), "SHOW max_slot_wal_keep_size"); got != "1GB" {
		t.Fatalf("max_slot_wal_keep_size = %s", got)
	}
	stop(t, c2)
}

func TestSecondStartReusesRunningServer(t *testing.T) {
	dataDir := filepath.Join(newDir(t), "data")
	c1 := start(t, Options{DataDir: dataDir})
	c2 := start(t, Options{DataDir: dataDir, Database: "other"})
	if c2.StartedHere() || c2.Port() != c1.Port() {
		t.Fatalf("second Start: started here %v, port %d; want false, %d", c2.StartedHere(), c2.Port(), c1.Port())
	}
	if got := query(t, c2.URL(), "SELECT current_database()"); got != "other" {
		t.Fatalf("second Start did not create its database: %s", got)
	}
	stop(t, c2) // not ours to stop
	if !accepting(c1.Port()) {
		t.Fatal("Stop on a reused cluster stopped the server")
	}
	stop(t, c1)
	if accepting(c1.Port()) {
		t.Fatal("server still running after the starter's Stop")
	}
}

func TestBusyPortIsReplacedAndRemembered(t *testing.T) {
	dataDir := filepath.Join(newDir(t), "data")
	c := start(t, Options{DataDir: dataDir})
	old := c.Port()
	stop(t, c)

	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(old)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c = start(t, Options{DataDir: dataDir})
	if c.Port() == old {
		t.Fatal("started on the busy port")
	}
	if remembered := c.readPortFile(); remembered != c.Port() {
		t.Fatalf("port file says %d, server uses %d", remembered, c.Port())
	}
	query(t, c.URL(), "SELECT 'ok'")
	stop(t, c)
}

func TestExplicitPort(t *testing.T) {
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	c := start(t, Options{DataDir: filepath.Join(newDir(t), "data"), Port: port})
	if c.Port() != port {
		t.Fatalf("port %d, want %d", c.Port(), port)
	}
	stop(t, c)
}

func TestConcurrentStartsShareOneServer(t *testing.T) {
	dataDir := filepath.Join(newDir(t), "data")
	var (
		wg       sync.WaitGroup
		clusters [3]*Cluster
		errs     [3]error
	)
	for i := range clusters {
		wg.Go(func() {
			clusters[i], errs[i] = Start(testCtx(t), Options{DataDir: dataDir, Logger: zaptest.NewLogger(t)})
		})
	}
	wg.Wait()
	starters := 0
	for i, c := range clusters {
		if errs[i] != nil {
			t.Fatalf("Start %d: %v", i, errs[i])
		}
		t.Cleanup(func() { _ = c.Stop(context.Background()) })
		if c.StartedHere() {
			starters++
		}
		if c.Port() != clusters[0].Port() {
			t.Fatalf("ports differ: %d vs %d", c.Port(), clusters[0].Port())
		}
	}
	if starters != 1 {
		t.Fatalf("%d Starts claim to have started the server, want 1", starters)
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(dataDir), ".data.initdb-*"))
	if len(leftovers) > 0 {
		t.Fatalf("temporary initdb directories left behind: %v", leftovers)
	}
}

func TestInterruptedInitIsCleanedUp(t *testing.T) {
	parent := newDir(t)
	// What a process killed during initdb leaves behind (pid 999999999 is not alive).
	stale := filepath.Join(parent, ".data.initdb-999999999-0badc0de")
	if err := os.MkdirAll(filepath.Join(stale, "base"), 0o700); err != nil {
		t.Fatal(err)
	}
	c := start(t, Options{DataDir: filepath.Join(parent, "data")})
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stale initdb directory still there: %v", err)
	}
	stop(t, c)
}

func TestRefusesForeignNonEmptyDir(t *testing.T) {
	dataDir := filepath.Join(newDir(t), "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dataDir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Start(testCtx(t), Options{DataDir: dataDir})
	if err == nil || !strings.Contains(err.Error(), "not a PostgreSQL data directory") {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dataDir, "notes.txt")); string(b) != "mine" {
		t.Fatal("Start touched a foreign directory")
	}
}

func TestRootNeedsReachableDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root hands the data directory to the postgres OS user")
	}
	dir := t.TempDir() // mode 0700, owned by root: postgres cannot enter it
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := Start(testCtx(t), Options{DataDir: filepath.Join(dir, "pg", "data")})
	if err == nil || !strings.Contains(err.Error(), "cannot reach") || !strings.Contains(err.Error(), "ENTITYD_DATA_DIR") {
		t.Fatalf("err = %v, want a reachability error suggesting ENTITYD_DATA_DIR", err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "pg"))
	if len(entries) > 0 {
		t.Fatalf("left %d entries behind", len(entries))
	}
}

// TestStopOnExit starts a cluster in a child process that exits without calling Stop;
// the watchdog must stop the server and remove the directory.
func TestStopOnExit(t *testing.T) {
	if dir := os.Getenv("PGCLUSTER_TEST_HELPER_DIR"); dir != "" {
		c, err := Start(context.Background(), Options{DataDir: filepath.Join(dir, "data")})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(3)
		}
		if _, err := c.StopOnExit(dir); err != nil {
			fmt.Println("error:", err)
			os.Exit(3)
		}
		fmt.Println("port", c.Port())
		os.Exit(3) // no Stop
	}
	dir := newDir(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestStopOnExit$")
	cmd.Env = append(os.Environ(), "PGCLUSTER_TEST_HELPER_DIR="+dir)
	out, _ := cmd.Output()
	var port int
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "port "); ok {
			port, _ = strconv.Atoi(p)
		}
	}
	if port == 0 {
		t.Fatalf("helper did not start a cluster: %s", out)
	}
	testwait.Until(t, "the watchdog to stop the server and remove its directory after the process exited", func() bool {
		_, statErr := os.Stat(dir)
		return errors.Is(statErr, os.ErrNotExist) && !accepting(port)
	}, 30*time.Second)
}
