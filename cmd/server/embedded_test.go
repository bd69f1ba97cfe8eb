package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/pgcluster"
	"github.com/entityd/entityd/internal/testwait"
)

// postmasterLive reports whether pid runs and is not a zombie waiting to be reaped.
func postmasterLive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || (b[i+2] != 'Z' && b[i+2] != 'X')
}

// stopPostmasterAtCleanup makes sure no PostgreSQL of pgDir outlives the test.
func stopPostmasterAtCleanup(t *testing.T, pgDir string) {
	t.Cleanup(func() {
		b, err := os.ReadFile(filepath.Join(pgDir, "postmaster.pid"))
		if err != nil {
			return
		}
		var pid int
		if _, err := fmt.Sscan(string(b), &pid); err != nil || !postmasterLive(pid) {
			return
		}
		t.Logf("stopping PostgreSQL %d left running in %s", pid, pgDir)
		_ = syscall.Kill(pid, syscall.SIGQUIT)
		defer func() { _ = syscall.Kill(pid, syscall.SIGKILL) }() // also when the wait fails the test
		testwait.Until(t, "a left-over postmaster to quit on SIGQUIT", func() bool { return !postmasterLive(pid) }, 15*time.Second)
	})
}

// TestEmbeddedPostgresBelongsToOneServer runs the real binary with no DATABASE_URL: a
// second server on the same data directory fails at once with one line, a server
// SIGKILLed leaves its PostgreSQL behind for the next one to take over, and SIGTERM
// stops PostgreSQL.
func TestEmbeddedPostgresBelongsToOneServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes and a PostgreSQL cluster")
	}
	tmp, err := pgcluster.MkdirTemp("", "entityd-embedded-") // reachable by postgres when we are root
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	pgDir := tmp + "/pg"
	stopPostmasterAtCleanup(t, pgDir) // registered first, so it runs after the processes are killed

	first := startProcess(t, "", freePort(t), "--data-dir", tmp) // an empty DATABASE_URL: embedded
	requireOK(t, http.MethodPost, first.URL+"/_electric/entity-types", `{"name":"note","description":"kept"}`, http.StatusCreated)
	orphan := postmasterPID(t, pgDir)
	require.Contains(t, first.logText(), `"socket_dir":"`+pgDir+`"`, "the socket lives in the data directory")

	// A second server on the same data directory exits at once with one line.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	second := exec.CommandContext(ctx, serverBinary(t), "--addr", fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		"--data-dir", tmp, "--no-demo", "--log-format", "json")
	second.Env = append(os.Environ(), "DATABASE_URL=")
	var stderr bytes.Buffer
	second.Stdout, second.Stderr = &stderr, &stderr
	began := time.Now()
	err = second.Run()
	took := time.Since(began)
	var exitErr *exec.ExitError
	require.True(t, errors.As(err, &exitErr), "the second server should exit with an error, got %v; output:\n%s", err, stderr.String())
	require.Equal(t, 1, exitErr.ExitCode(), stderr.String())
	require.Less(t, took, 10*time.Second, "the second server should fail at once")
	want := fmt.Sprintf("entityd: embedded PostgreSQL data directory %s is in use by another entityd (pid %d); "+
		"to run several servers, start PostgreSQL yourself and give each server the same DATABASE_URL", pgDir, first.cmd.Process.Pid)
	var lines []string
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	require.Contains(t, lines, want, "stderr:\n%s", strings.Join(lines, "\n"))
	require.NotContains(t, stderr.String(), "stopped with an error", "one plain line, not a log record as well")
	t.Logf("second server exited with status 1 after %v: %s", took.Round(time.Millisecond), want)
	require.Equal(t, orphan, postmasterPID(t, pgDir), "the second server did not touch PostgreSQL")
	requireOK(t, http.MethodGet, first.URL+"/_electric/entity-types/note", "", http.StatusOK)

	// SIGKILL the first server: its PostgreSQL is orphaned; the next server takes it over.
	first.kill()
	require.True(t, postmasterLive(orphan), "PostgreSQL should outlive the SIGKILLed server")
	third := startProcess(t, "", freePort(t), "--data-dir", tmp)
	log := third.logText()
	require.Contains(t, log, "took over an orphaned embedded PostgreSQL")
	require.Contains(t, log, fmt.Sprintf(`"pid":%d`, orphan))
	require.False(t, postmasterLive(orphan), "the orphan was stopped")
	ours := postmasterPID(t, pgDir)
	require.NotEqual(t, orphan, ours)
	requireOK(t, http.MethodGet, third.URL+"/_electric/entity-types/note", "", http.StatusOK)

	// SIGTERM: a clean exit that stops PostgreSQL.
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer stopCancel()
	require.NoError(t, third.stop(stopCtx), third.logText())
	require.NoFileExists(t, filepath.Join(pgDir, "postmaster.pid"))
	testwait.Until(t, "the postmaster to exit", func() bool { return !postmasterLive(ours) }, 5*time.Second)
	require.Contains(t, third.logText(), "stopped PostgreSQL")
}
