//go:build unix

// Package failover runs entityd through a PostgreSQL failover on this machine: a
// primary with a synchronous standby (initdb, pg_basebackup, synchronous_standby_names),
// entityd on a multi-host DATABASE_URL (target_session_attrs=read-write), writers
// appending to a stream, then the primary killed (SIGKILL) and the standby promoted.
// It reports how long writes failed and whether every acknowledged write is still
// there. The failover test runs a short version; internal/tools/failover a long one.
package failover

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/pgcluster"
)

// Options of a run. Zero values take the defaults in parentheses.
type Options struct {
	Dir     string        // where the two clusters live (required; removed by the caller)
	Entityd string        // the entityd binary (required)
	Writers int           // concurrent writers (8)
	Before  time.Duration // load before the primary is killed (3s)
	Detect  time.Duration // from the kill to the promotion, what a failover manager takes (1s)
	After   time.Duration // load after the promotion (5s)
	Log     *zap.Logger
}

// Report is what a run measured.
type Report struct {
	Acked   int // writes entityd acknowledged (204)
	Present int // of those, found in the stream after the failover
	Lost    int // acknowledged but missing
	Failed  int // attempts that failed (the outage)
	// Outage is from the kill to the first write acknowledged by the promoted standby;
	// AfterPromote from the start of the promotion to that write.
	Outage       time.Duration
	AfterPromote time.Duration
	Recovered    bool // a write begun after the promotion was acknowledged
}

func (o *Options) defaults() {
	if o.Writers <= 0 {
		o.Writers = 8
	}
	if o.Before <= 0 {
		o.Before = 3 * time.Second
	}
	if o.Detect <= 0 {
		o.Detect = time.Second
	}
	if o.After <= 0 {
		o.After = 5 * time.Second
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
}

// Run performs one failover under load.
func Run(ctx context.Context, o Options) (*Report, error) {
	o.defaults()
	primary, standby, err := startPair(ctx, o)
	if err != nil {
		return nil, err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = standby.Stop(stopCtx)
		_ = primary.Stop(stopCtx)
	}()

	dbURL := fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/entityd?sslmode=disable&target_session_attrs=read-write",
		primary.Port(), standby.Port())
	base, stop, err := startEntityd(ctx, o, dbURL)
	if err != nil {
		return nil, err
	}
	defer stop()

	w := newWriters(base+"/failover-test", o.Writers)
	if err := w.create(ctx); err != nil {
		return nil, err
	}
	loadCtx, endLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	w.start(loadCtx, &wg)

	sleep(ctx, o.Before)
	killedAt := time.Now()
	w.markAt(killedAt)
	if err := primary.Kill(); err != nil {
		endLoad()
		wg.Wait()
		return nil, err
	}
	sleep(ctx, o.Detect)
	promoting := time.Now()
	if err := promote(ctx, standby); err != nil {
		endLoad()
		wg.Wait()
		return nil, err
	}
	promotedAt := time.Now()
	o.Log.Info("standby promoted", zap.Duration("after_kill", promotedAt.Sub(killedAt)))
	sleep(ctx, o.After)
	endLoad()
	wg.Wait()

	rep := &Report{Acked: len(w.acked), Failed: w.failed, Recovered: w.begunAfter(promotedAt)}
	if first, ok := w.firstAckAfter(promoting); ok {
		rep.Outage = first.Sub(killedAt)
		rep.AfterPromote = first.Sub(promoting)
	}
	present, err := w.stored(ctx)
	if err != nil {
		return rep, err
	}
	for id := range w.acked {
		if present[id] {
			rep.Present++
		} else {
			rep.Lost++
		}
	}
	return rep, nil
}

// startPair starts a primary whose commits wait for a synchronous standby, and that
// standby, and waits until the primary reports it as synchronous.
func startPair(ctx context.Context, o Options) (primary, standby *pgcluster.Cluster, err error) {
	primary, err = pgcluster.Start(ctx, pgcluster.Options{DataDir: filepath.Join(o.Dir, "primary"), Fsync: true,
		Logger: o.Log.Named("primary"), Settings: map[string]string{"wal_level": "replica", "max_wal_senders": "4",
			"synchronous_commit": "on"}})
	if err != nil {
		return nil, nil, err
	}
	standbyDir := filepath.Join(o.Dir, "standby")
	if err := primary.BaseBackup(ctx, standbyDir); err != nil {
		_ = primary.Stop(context.Background())
		return nil, nil, err
	}
	standby, err = pgcluster.Start(ctx, pgcluster.Options{DataDir: standbyDir, Fsync: true, Logger: o.Log.Named("standby"),
		Settings: map[string]string{"primary_conninfo": primary.StandbyConninfo("standby1"), "hot_standby": "on",
			"synchronous_commit": "on"}})
	if err != nil {
		_ = primary.Stop(context.Background())
		return nil, nil, err
	}
	if err := waitSync(ctx, primary); err != nil {
		_ = standby.Stop(context.Background())
		_ = primary.Stop(context.Background())
		return nil, nil, err
	}
	return primary, standby, nil
}

// waitSync makes standby1 the primary's synchronous standby (only now: until a standby
// is connected, every commit would wait, the cluster's own start-up included) and waits
// until the primary streams to it synchronously.
func waitSync(ctx context.Context, primary *pgcluster.Cluster) error {
	conn, err := pgx.Connect(ctx, primary.AdminURL())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `ALTER SYSTEM SET synchronous_standby_names = 'standby1'`); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, `SELECT pg_reload_conf()`); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var state string
		err := conn.QueryRow(ctx, `SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1'`).Scan(&state)
		if err == nil && state == "sync" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("failover: the standby did not become synchronous in 30s (state %q, %v)", state, err)
		}
		sleep(ctx, 50*time.Millisecond)
	}
}

// promote makes the standby a primary and waits until it is one.
func promote(ctx context.Context, standby *pgcluster.Cluster) error {
	conn, err := pgx.Connect(ctx, standby.AdminURL())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_promote(true, 60)`).Scan(&ok); err != nil {
		return fmt.Errorf("failover: promote: %w", err)
	}
	if !ok {
		return fmt.Errorf("failover: the standby was not promoted within 60s")
	}
	return nil
}

// startEntityd runs the binary on dbURL and waits until it serves.
func startEntityd(ctx context.Context, o Options, dbURL string) (base string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := l.Addr().String()
	_ = l.Close()
	logFile, err := os.Create(filepath.Join(o.Dir, "entityd.log"))
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(o.Entityd, "--addr", addr, "--no-demo", "--log-format", "json", "--log-level", "warn")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return "", nil, err
	}
	stop = func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logFile.Close()
	}
	base = "http://" + addr
	if err := waitHTTP(ctx, base+"/_electric/ready"); err != nil {
		stop()
		log, _ := os.ReadFile(filepath.Join(o.Dir, "entityd.log"))
		return "", nil, fmt.Errorf("%w\nentityd log:\n%s", err, strings.TrimSpace(string(log)))
	}
	return base, stop, nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
