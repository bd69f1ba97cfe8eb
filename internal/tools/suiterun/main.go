// Command suiterun runs an external test suite against a fresh entityd:
//
//	go run ./internal/tools/suiterun [flags] -- <command> [args...]
//
// It creates an empty database on the cluster named by ENTITYD_TEST_DATABASE_URL (set by
// withpg), starts bin/entityd on a free 127.0.0.1 port against it with test-friendly
// timings, waits until it is healthy, runs the command with ENTITYD_URL set to the
// server's base URL, then stops the server and drops the database. It exits with the
// command's exit code. The server's log goes to a file whose path is printed on failure.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

func main() { os.Exit(run()) }

func run() int {
	bin := flag.String("server", "bin/entityd", "the entityd binary")
	longPoll := flag.String("long-poll-timeout", "500ms", "the server's long-poll timeout")
	sse := flag.String("sse-lifetime", "60s", "the server's SSE lifetime")
	keepLog := flag.Bool("keep-log", false, "print the server log path even on success")
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: suiterun [flags] -- command [args...]")
		return 2
	}
	admin := os.Getenv("ENTITYD_TEST_DATABASE_URL")
	if admin == "" {
		fmt.Fprintln(os.Stderr, "suiterun: ENTITYD_TEST_DATABASE_URL is not set (run under `go run ./internal/tools/withpg --`)")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	dbURL, drop, err := createDatabase(ctx, admin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "suiterun:", err)
		return 1
	}
	defer drop()

	port, err := freePort()
	if err != nil {
		fmt.Fprintln(os.Stderr, "suiterun:", err)
		return 1
	}
	logFile, err := os.CreateTemp("", "entityd-suite-*.log")
	if err != nil {
		fmt.Fprintln(os.Stderr, "suiterun:", err)
		return 1
	}
	defer logFile.Close()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	server := exec.Command(*bin, "--addr", fmt.Sprintf("127.0.0.1:%d", port), "--no-demo",
		"--long-poll-timeout", *longPoll, "--sse-lifetime", *sse, "--log-format", "json")
	server.Env = append(os.Environ(), "DATABASE_URL="+dbURL)
	server.Stdout, server.Stderr = logFile, logFile
	if err := server.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "suiterun: start server:", err)
		return 1
	}
	exited := make(chan error, 1)
	go func() { exited <- server.Wait() }()
	stopServer := func() {
		_ = server.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = server.Process.Kill()
			<-exited
		}
	}
	if err := waitHealthy(ctx, base, exited); err != nil {
		fmt.Fprintf(os.Stderr, "suiterun: server did not become healthy: %v (log: %s)\n", err, logFile.Name())
		stopServer()
		return 1
	}
	fmt.Fprintf(os.Stderr, "suiterun: entityd ready at %s\n", base)

	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "ENTITYD_URL="+base, "ENTITYD_DATABASE_URL="+dbURL)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	runErr := cmd.Run()
	stopServer()
	code := 0
	if runErr != nil {
		code = 1
		if ee, ok := runErr.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	if code != 0 || *keepLog {
		fmt.Fprintf(os.Stderr, "suiterun: server log: %s\n", logFile.Name())
	} else {
		_ = os.Remove(logFile.Name())
	}
	return code
}

func createDatabase(ctx context.Context, admin string) (string, func(), error) {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", nil, fmt.Errorf("connect to %s: %w", admin, err)
	}
	defer conn.Close(ctx)
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "entityd_suite_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, err
	}
	u, err := url.Parse(admin)
	if err != nil {
		return "", nil, err
	}
	u.Path = "/" + name
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	}
	return u.String(), drop, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitHealthy(ctx context.Context, base string, exited <-chan error) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("server exited: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		resp, err := http.Get(base + "/_electric/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("timed out")
}
