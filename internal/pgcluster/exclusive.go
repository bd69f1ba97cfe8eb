package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
)

// ErrInUse matches (errors.Is) the *InUseError that an Exclusive Start returns when
// another process holds the data directory.
var ErrInUse = errors.New("embedded PostgreSQL data directory is in use by another process")

// InUseError is returned by an Exclusive Start when another process owns the data
// directory. Its message is a single line that says how to run several servers.
type InUseError struct {
	DataDir string // as given in Options.DataDir
	PID     int    // the owner's process id, 0 if it could not be read
}

func (e *InUseError) Error() string {
	dir := e.DataDir
	if strings.ContainsAny(dir, "\r\n") {
		dir = strconv.Quote(dir)
	}
	owner := "another entityd"
	if e.PID > 0 {
		owner = fmt.Sprintf("another entityd (pid %d)", e.PID)
	}
	return fmt.Sprintf("embedded PostgreSQL data directory %s is in use by %s; to run several servers, start PostgreSQL yourself and give each server the same DATABASE_URL", dir, owner)
}

// Is makes errors.Is(err, ErrInUse) true.
func (e *InUseError) Is(target error) bool { return target == ErrInUse }

// lockPath is the lock file of an Exclusive cluster: a sibling of the data directory
// (<DataDir>.lock), so that it is neither inside the directory PostgreSQL owns nor
// removed with it.
func (c *Cluster) lockPath() string { return c.dataDir + ".lock" }

// lock takes the exclusive, non-blocking flock of the data directory for this Cluster
// and writes our pid into the lock file. The kernel releases the lock when the process
// dies, however it dies; the lock file itself stays.
func (c *Cluster) lock(displayDir string) error {
	f, busy, err := lockFile(c.lockPath())
	if err != nil {
		return fmt.Errorf("pgcluster: lock %s: %w", c.lockPath(), err)
	}
	if busy {
		return &InUseError{DataDir: displayDir, PID: c.lockOwner()}
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	c.lockFile = f
	return nil
}

// lockOwner reads the pid the lock holder wrote, waiting briefly for a holder that has
// just taken the lock and not yet written it.
func (c *Cluster) lockOwner() int {
	for i := 0; ; i++ {
		b, _ := os.ReadFile(c.lockPath())
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			return pid
		}
		if i == 10 {
			return 0
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// unlock releases the data directory lock, if held.
func (c *Cluster) unlock() {
	if c.lockFile != nil {
		_ = c.lockFile.Close() // closing the only descriptor releases the flock
		c.lockFile = nil
	}
}

// takeOver stops a server found running in the data directory of an Exclusive cluster.
// We hold the lock, so whoever started it is gone (an entityd that was killed, crashed
// or predates the lock): it is an orphan. It is stopped (fast, else immediate) so that
// the caller starts it afresh with the current settings.
func (c *Cluster) takeOver(ctx context.Context) error {
	pid, _, _ := readPostmasterPID(c.dataDir)
	stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	_, err := c.run(stopCtx, "pg_ctl", "stop", "-D", c.dataDir, "-m", "fast", "-w", "-t", timeoutSecs(stopCtx), "-s")
	cancel()
	mode := "fast"
	if err != nil {
		mode = "immediate"
		c.log.Warn("orphaned PostgreSQL did not stop in fast mode; stopping it in immediate mode", zap.Int("pid", pid), zap.Error(err))
		stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err = c.run(stopCtx, "pg_ctl", "stop", "-D", c.dataDir, "-m", "immediate", "-w", "-t", timeoutSecs(stopCtx), "-s")
		cancel()
	}
	running, rerr := c.running(context.WithoutCancel(ctx))
	switch {
	case rerr != nil:
		return fmt.Errorf("pgcluster: stop the orphaned PostgreSQL (pid %d) in %s: %w", pid, c.dataDir, rerr)
	case running && err != nil:
		return fmt.Errorf("pgcluster: stop the orphaned PostgreSQL (pid %d) in %s: %w", pid, c.dataDir, err)
	case running:
		return fmt.Errorf("pgcluster: the orphaned PostgreSQL (pid %d) in %s is still running after pg_ctl stop", pid, c.dataDir)
	}
	c.log.Warn("took over an orphaned embedded PostgreSQL",
		zap.String("data_dir", c.dataDir), zap.Int("pid", pid), zap.String("stopped", mode),
		zap.String("reason", "left running by a process that exited without stopping it; starting it again as ours"))
	return nil
}
