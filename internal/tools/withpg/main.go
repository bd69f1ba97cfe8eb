// Command withpg runs a command against a throwaway PostgreSQL cluster:
//
//	go run ./internal/tools/withpg [--fsync] [--keep] [-v] -- <command> [args...]
//
// It starts a private cluster (internal/pgcluster) in a fresh temporary directory, runs
// the command with ENTITYD_TEST_DATABASE_URL set to the cluster's admin DSN (the
// "postgres" database of superuser postgres; internal/pgtest creates its test databases
// there) and ENTITYD_TEST_DATABASE_PORT, PGHOST, PGPORT and PGUSER set so that psql
// works too, then stops the cluster, removes the directory and exits with the command's
// exit code. SIGINT and SIGTERM are forwarded to the command; cleanup still happens, and
// a watchdog cleans up even if withpg itself is killed.
//
// Throwaway clusters run with fsync off; --fsync keeps PostgreSQL's durable defaults (for
// benchmarks). --keep leaves the directory behind (the server is still stopped).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/entityd/entityd/internal/pgcluster"
)

func main() { os.Exit(run()) }

func run() int {
	flags := flag.NewFlagSet("withpg", flag.ContinueOnError)
	fsync := flags.Bool("fsync", false, "keep fsync/synchronous_commit/full_page_writes on (durable, slower; for benchmarks)")
	keep := flags.Bool("keep", false, "keep the cluster directory afterwards (the server is stopped)")
	verbose := flags.Bool("v", false, "log cluster init/start/stop")
	flags.Usage = func() {
		fmt.Fprintln(flags.Output(), "usage: go run ./internal/tools/withpg [--fsync] [--keep] [-v] -- <command> [args...]")
		flags.PrintDefaults()
	}
	if err := flags.Parse(os.Args[1:]); err != nil {
		return 2
	}
	args := flags.Args()
	if len(args) == 0 {
		flags.Usage()
		return 2
	}

	level := zapcore.WarnLevel
	if *verbose {
		level = zapcore.InfoLevel
	}
	logCfg := zap.NewDevelopmentConfig()
	logCfg.Level = zap.NewAtomicLevelAt(level)
	logCfg.DisableStacktrace = true
	log, err := logCfg.Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, "withpg:", err)
		return 1
	}
	defer func() { _ = log.Sync() }()

	// Signals cancel the startup; once the command runs they are forwarded to it.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	startCtx, cancelStart := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancelStart()
	var (
		mu          sync.Mutex
		child       *os.Process
		interrupted os.Signal
	)
	go func() {
		for sig := range sigs {
			mu.Lock()
			if child != nil {
				_ = child.Signal(sig)
			} else if interrupted == nil {
				interrupted = sig
				cancelStart()
			}
			mu.Unlock()
		}
	}()

	tmp, err := pgcluster.MkdirTemp("", "entityd-withpg-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "withpg:", err)
		return 1
	}
	removeDir := tmp
	if *keep {
		removeDir = ""
	}
	cleanupDir := func() {
		if *keep {
			fmt.Fprintf(os.Stderr, "withpg: kept %s\n", tmp)
			return
		}
		if err := os.RemoveAll(tmp); err != nil {
			fmt.Fprintln(os.Stderr, "withpg:", err)
		}
	}

	cluster, err := pgcluster.Start(startCtx, pgcluster.Options{
		DataDir:  filepath.Join(tmp, "data"),
		Database: "postgres",
		Logger:   log,
		Fsync:    *fsync,
		// Several test binaries share this cluster, each with pools per test.
		Settings: map[string]string{"max_connections": "500"},
	})
	if err != nil {
		cleanupDir()
		mu.Lock()
		sig := interrupted
		mu.Unlock()
		if sig != nil {
			fmt.Fprintln(os.Stderr, "withpg: interrupted while starting PostgreSQL")
			return 128 + signalNumber(sig)
		}
		if errors.Is(err, pgcluster.ErrNotInstalled) {
			fmt.Fprintln(os.Stderr, "withpg:", err)
		} else {
			fmt.Fprintln(os.Stderr, "withpg: start PostgreSQL:", err)
		}
		return 1
	}
	stopCluster := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := cluster.Stop(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "withpg: stop PostgreSQL:", err)
		}
		cleanupDir()
	}
	// Should withpg be killed outright, the watchdog stops the server and removes tmp.
	if _, err := cluster.StopOnExit(removeDir); err != nil {
		fmt.Fprintln(os.Stderr, "withpg: warning:", err)
	}

	port := strconv.Itoa(cluster.Port())
	fmt.Fprintf(os.Stderr, "withpg: PostgreSQL ready: ENTITYD_TEST_DATABASE_URL=%s\n", cluster.AdminURL())

	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(),
		"ENTITYD_TEST_DATABASE_URL="+cluster.AdminURL(),
		"ENTITYD_TEST_DATABASE_PORT="+port,
		"PGHOST=127.0.0.1", "PGPORT="+port, "PGUSER=postgres",
	)
	mu.Lock()
	if interrupted != nil { // a signal arrived just as the cluster came up
		mu.Unlock()
		stopCluster()
		return 128 + signalNumber(interrupted)
	}
	err = cmd.Start()
	if err == nil {
		child = cmd.Process
	}
	mu.Unlock()
	if err != nil {
		fmt.Fprintln(os.Stderr, "withpg:", err)
		stopCluster()
		return 127
	}
	err = cmd.Wait()
	mu.Lock()
	child = nil
	mu.Unlock()

	code := 0
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		code = exitErr.ExitCode()
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	default:
		fmt.Fprintln(os.Stderr, "withpg:", err)
		code = 1
	}
	stopCluster()
	return code
}

func signalNumber(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return int(s)
	}
	return 1
}
