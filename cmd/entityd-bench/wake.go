package main

// The wake benchmark measures delivery to Go entity handlers: send → handler start
// latency at a fixed rate, and end-to-end throughput (send → no-op handler →
// acknowledgement). It has three commands:
//
//	entityd-bench wake-server -addr-file F   # entityd (server.New) + the bench handler; DATABASE_URL
//	entityd-bench wake-load -url API -ctl CTL -mode latency|throughput
//	entityd-bench wake -mode latency|throughput   # both in one process (CPU not separable)
//
// wake-server and wake-load run as separate processes (bench/wake.sh), so the CPU of the
// server and of the load generator are measured apart. Timestamps are CLOCK_MONOTONIC,
// which both processes share: the load generator puts the send time in the payload, the
// handler records its start time next to it. docs/benchmarks-wake.md has the details.

import (
	"context"
	"flag"
	"os"
	"time"
)

func runWake(args []string) error {
	fs := flag.NewFlagSet("wake", flag.ExitOnError)
	var sf wakeServerFlags
	var lf wakeLoadFlags
	fs.StringVar(&sf.dbURL, "database-url", os.Getenv("DATABASE_URL"), "PostgreSQL URL (default $DATABASE_URL)")
	fs.StringVar(&sf.logLevel, "log-level", "warn", "server log level")
	fs.IntVar(&sf.lanes, "commit-lanes", 0, "group-commit lanes (0: the server default)")
	fs.IntVar(&sf.conns, "db-max-conns", 0, "connection pool size (0: the server default)")
	fs.BoolVar(&sf.writeText, "write-text", false, "the handler writes one text event per inbox wake instead of nothing")
	fs.DurationVar(&sf.idleRelease, "idle-release", 0, "wake.Options.IdleRelease (0: the default)")
	pgCounters := fs.Bool("pg-counters", false, "read PostgreSQL counters per message (pg_stat_*) from the same database")
	fs.StringVar(&lf.mode, "mode", "latency", "latency (open loop at -rate) or throughput (closed loop with -c senders)")
	fs.IntVar(&lf.entities, "entities", 0, "entities (0: 100 for latency, 1000 for throughput)")
	fs.Float64Var(&lf.rate, "rate", 500, "latency mode: sends per second")
	fs.StringVar(&lf.arrivals, "arrivals", "poisson", "latency mode: poisson or uniform")
	fs.IntVar(&lf.maxInflight, "max-inflight", 2048, "latency mode: sends in flight at most")
	fs.IntVar(&lf.conc, "c", 64, "throughput mode: concurrent senders")
	fs.DurationVar(&lf.dur, "d", 20*time.Second, "measurement window")
	fs.DurationVar(&lf.warmup, "warmup", 5*time.Second, "load before the window")
	fs.DurationVar(&lf.drainTimeout, "drain-timeout", 120*time.Second, "give up waiting for delivery after this long without progress")
	fs.DurationVar(&lf.settle, "pg-settle", 11*time.Second, "with -pg-counters: wait before reading the counters after the drain")
	fs.BoolVar(&lf.analyze, "analyze", true, "with -pg-counters: ANALYZE the database after spawning, before the load")
	fs.IntVar(&lf.pgPID, "pg-pid", 0, "optional: the postmaster's pid, for the CPU split")
	fs.StringVar(&lf.pprofOut, "pprof", "", "optional: write a CPU profile of the window to this file")
	fs.BoolVar(&lf.verify, "verify", true, "check every entity's scanned_seq after the drain")
	fs.BoolVar(&lf.jsonOut, "json", false, "print the result as JSON")
	fs.StringVar(&lf.out, "out", "", "also write the JSON result to this file")
	fs.StringVar(&lf.label, "label", "", "free-form label stored in the result")
	_ = fs.Parse(args)
	sf.addr, sf.ctl = "127.0.0.1:0", "127.0.0.1:0"
	if *pgCounters {
		lf.dbURL = sf.dbURL
	}

	ctx, stop := signalContext()
	defer stop()
	srvCtx, stopServer := context.WithCancel(ctx)
	defer stopServer()
	ws, done, err := startWakeServer(srvCtx, &sf)
	if err != nil {
		return err
	}
	lf.url, lf.ctl = ws.addrs.API, ws.addrs.Ctl
	loadErr := wakeLoad(ctx, &lf)
	stopServer()
	if err := <-done; loadErr == nil {
		loadErr = err
	}
	return loadErr
}
