// Command wakeprobe is a small entityd for the delivery tests that run real server
// processes (runtime's SIGKILL and multi-process tests). It serves one entity type,
// "probe", whose handler records every inbox message it is given:
//
//   - it counts the probe_run rows in the entity's state (those of the runs committed
//     before it started: see below);
//   - it takes a Postgres session advisory lock keyed by the entity URL, with
//     pg_try_advisory_lock on a connection it keeps for the whole run; when the lock is
//     taken already, another run of the same entity is in progress somewhere (in this
//     process or another one on the database) and the run inserts a row into
//     probe_overlaps;
//   - it inserts (entity, key, pid, attempt) into probe_deliveries (outside the wake's
//     transaction, so a run whose acknowledgement never commits is recorded too);
//   - it sleeps (--sleep, or the payload's "sleep_ms" when larger), unlocks, and writes
//     a probe_run row of its own (key "<pid>-<n>", value {key, pid, seen}: seen is the
//     count from the start) and the text "ack <key>", which commit with the wake's
//     acknowledgement.
//
// Runs that overlap show in probe_overlaps, whether or not they could commit (the
// runtime's fence refuses a stale run's writes). Committed runs that overlapped show in
// the stream: when runs commit one after the other, the n-th probe_run committed saw
// n-1 before it; one that started before another committed saw too few.
//
// The tables are created when missing. The listening address is printed to stdout as
// "LISTENING <addr>" once the server serves; logs go to stderr.
//
//	wakeprobe --database-url postgres://... --addr 127.0.0.1:0 --lease 2s --sleep 5ms
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/entityd/entityd/runtime"
	"github.com/entityd/entityd/server"
	"github.com/entityd/entityd/wake"
)

const schema = `
CREATE TABLE IF NOT EXISTS probe_deliveries (
    id      bigserial   PRIMARY KEY,
    entity  text        NOT NULL,
    key     text        NOT NULL,
    pid     integer     NOT NULL,
    attempt integer     NOT NULL,
    at      timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX IF NOT EXISTS probe_deliveries_key_idx ON probe_deliveries (key);
CREATE TABLE IF NOT EXISTS probe_overlaps (
    id     bigserial   PRIMARY KEY,
    entity text        NOT NULL,
    key    text        NOT NULL,
    pid    integer     NOT NULL,
    at     timestamptz NOT NULL DEFAULT clock_timestamp()
);`

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "wakeprobe:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		dbURL       = flag.String("database-url", os.Getenv("DATABASE_URL"), "Postgres URL (default $DATABASE_URL)")
		addr        = flag.String("addr", "127.0.0.1:0", "listen address")
		sleep       = flag.Duration("sleep", 0, "how long every handler run holds the entity's lock")
		lease       = flag.Duration("lease", 0, "wake lease (0: the default)")
		heartbeat   = flag.Duration("heartbeat", 0, "wake heartbeat (0: the default)")
		sweep       = flag.Duration("sweep", 0, "sweep interval (0: the default)")
		idleRelease = flag.Duration("idle-release", 0, "release an entity idle for this long (0: the default)")
		maxConns    = flag.Int("db-max-conns", 32, "server connection pool size")
		probeConns  = flag.Int("probe-conns", 32, "connections of the probe's own pool (one per running handler)")
		logLevel    = flag.String("log-level", "warn", "debug, info, warn or error")
	)
	flag.Parse()
	if *dbURL == "" {
		return errors.New("no database: pass --database-url or set DATABASE_URL")
	}
	var level zapcore.Level
	if err := level.Set(*logLevel); err != nil {
		return err
	}
	logCfg := zap.NewProductionConfig()
	logCfg.Level = zap.NewAtomicLevelAt(level)
	log, err := logCfg.Build()
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	poolCfg, err := pgxpool.ParseConfig(*dbURL)
	if err != nil {
		return err
	}
	poolCfg.MaxConns = int32(*probeConns)
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := createTables(ctx, pool); err != nil {
		return fmt.Errorf("create probe tables: %w", err)
	}

	p := &probe{pool: pool, sleep: *sleep, pid: os.Getpid(), log: log}
	srv := server.New(server.Config{
		Addr:            *addr,
		DatabaseURL:     *dbURL,
		DBMaxConns:      *maxConns,
		ShutdownTimeout: 10 * time.Second,
		Logger:          log,
		Wake: wake.Options{Lease: *lease, Heartbeat: *heartbeat, SweepInterval: *sweep, IdleRelease: *idleRelease,
			BaseBackoff: 50 * time.Millisecond, MaxBackoff: time.Second},
		Ready: func(a net.Addr) { fmt.Printf("LISTENING %s\n", a) },
	}, runtime.EntityDefinition{
		Type:        "probe",
		Description: "records its deliveries and overlapping runs (delivery tests)",
		Handler:     p.handle,
	})
	return srv.Run(ctx)
}

// createTables creates the probe's tables once, even when several probes start at once.
func createTables(ctx context.Context, pool *pgxpool.Pool) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7001)`); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, schema); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

type probe struct {
	pool  *pgxpool.Pool
	sleep time.Duration
	pid   int
	log   *zap.Logger
	runs  atomic.Int64 // names the runs of this process
}

func (p *probe) handle(ctx *runtime.Context) error {
	msg, ok := ctx.Wake.(runtime.InboxWake)
	if !ok {
		return nil
	}
	sleep := p.sleep
	var opts struct {
		SleepMS int `json:"sleep_ms"`
	}
	if json.Unmarshal(msg.Payload, &opts) == nil && time.Duration(opts.SleepMS)*time.Millisecond > sleep {
		sleep = time.Duration(opts.SleepMS) * time.Millisecond
	}
	// the runs committed before this one started; read before the lock is taken, so that
	// this run's span from here to its commit covers the time it holds the lock
	seen := len(ctx.State().Keys("probe_run"))
	run := strconv.Itoa(p.pid) + "-" + strconv.FormatInt(p.runs.Add(1), 10)
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	locked := false
	defer func() {
		if locked {
			// unlock even when the run was cancelled; a connection that may still hold the
			// lock must not go back to the pool
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock(hashtextextended($1, 0))`, ctx.Entity.URL); err != nil {
				_ = conn.Conn().Close(uctx)
			}
		}
		conn.Release()
	}()
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended($1, 0))`, ctx.Entity.URL).Scan(&locked); err != nil {
		return err
	}
	if !locked {
		p.log.Error("overlapping handler runs", zap.String("entity", ctx.Entity.URL), zap.String("key", msg.Key))
		if _, err := conn.Exec(ctx, `INSERT INTO probe_overlaps (entity, key, pid) VALUES ($1, $2, $3)`,
			ctx.Entity.URL, msg.Key, p.pid); err != nil {
			return err
		}
	}
	if _, err := conn.Exec(ctx, `INSERT INTO probe_deliveries (entity, key, pid, attempt) VALUES ($1, $2, $3, $4)`,
		ctx.Entity.URL, msg.Key, p.pid, ctx.Attempt); err != nil {
		return err
	}
	if sleep > 0 {
		select {
		case <-time.After(sleep):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := ctx.WriteEvent("probe_run", run, "insert", map[string]any{"key": msg.Key, "pid": p.pid, "seen": seen}); err != nil {
		return err
	}
	return ctx.WriteText("ack " + msg.Key)
}
