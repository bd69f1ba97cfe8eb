package pgcluster

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/lifecycle"
)

const (
	// superviseInterval is how often the supervisor checks that the postmaster lives.
	superviseInterval = 500 * time.Millisecond
	// restartBackoff is the first wait between restart attempts; it doubles up to
	// maxRestartBackoff.
	restartBackoff    = 250 * time.Millisecond
	maxRestartBackoff = 10 * time.Second
	// restartTimeout bounds one `pg_ctl start` of the supervisor (crash recovery runs in
	// it). Stop waits for an attempt in progress, so it is kept moderate; a server still
	// recovering when it expires is adopted, not killed.
	restartTimeout = 30 * time.Second
)

// supervisor is the goroutine that restarts the postmaster of an Exclusive cluster.
type supervisor struct {
	quit context.CancelFunc
	done chan struct{}
}

func (c *Cluster) startSupervisor() {
	quit, cancel := context.WithCancel(context.Background())
	s := &supervisor{quit: cancel, done: make(chan struct{})}
	c.sup = s
	go c.supervise(quit, s)
}

// stopSupervisor ends the supervisor and waits for it; an attempt to restart the server
// that is under way is let finish, so that Stop then finds and stops that server.
func (c *Cluster) stopSupervisor() {
	s := c.sup
	if s == nil {
		return
	}
	s.quit()
	<-s.done
}

// supervise checks every superviseInterval that the postmaster lives, and restarts it
// when it does not (the next check comes an interval after the restart), until quit.
func (c *Cluster) supervise(quit context.Context, s *supervisor) {
	defer close(s.done)
	(&lifecycle.Every{Interval: superviseInterval, Run: c.check}).Until(quit)
}

func (c *Cluster) check(quit context.Context) {
	c.mu.Lock()
	pid := c.pid
	c.mu.Unlock()
	if !c.postmasterLives(pid) {
		c.recoverFrom(quit, pid)
	}
}

// postmasterLives is the supervisor's cheap check: the postmaster we started is alive
// (kill(pid, 0)) and postmaster.pid still names it. Only when those disagree does it ask
// pg_ctl status, and it adopts a postmaster that pg_ctl finds under another pid.
func (c *Cluster) postmasterLives(pid int) bool {
	if processExited(pid) {
		return false
	}
	if p, _, err := readPostmasterPID(c.dataDir); err == nil && p == pid {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	running, err := c.running(ctx)
	if err != nil {
		return true // cannot tell: look again at the next tick
	}
	if running {
		if p, _, err := readPostmasterPID(c.dataDir); err == nil && p != pid {
			c.setPID(p)
		}
	}
	return running
}

// recoverFrom restarts the server after its postmaster died, with backoff, until it is
// back or the supervisor is told to quit.
func (c *Cluster) recoverFrom(quit context.Context, oldPID int) {
	down := time.Now()
	c.log.Error("embedded PostgreSQL exited unexpectedly; restarting",
		zap.String("data_dir", c.dataDir), zap.Int("pid", oldPID))
	wait := restartBackoff
	for attempt := 1; ; attempt++ {
		if quit.Err() != nil {
			return
		}
		pid, err := c.restart()
		if err == nil {
			c.log.Info("embedded PostgreSQL restarted", zap.String("data_dir", c.dataDir), zap.Int("pid", pid),
				zap.Duration("downtime", time.Since(down)), zap.Int("attempts", attempt))
			return
		}
		c.log.Warn("embedded PostgreSQL did not restart; retrying", zap.String("data_dir", c.dataDir),
			zap.Int("attempt", attempt), zap.Duration("retry_in", wait), zap.String("reason", c.startFailure(err)))
		timer := time.NewTimer(wait)
		select {
		case <-quit.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		wait = min(2*wait, maxRestartBackoff)
	}
}

// restart starts the server again on the same port (the URL handed out must stay
// valid) and returns the new postmaster's pid.
func (c *Cluster) restart() (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), restartTimeout)
	defer cancel()
	err := c.launch(ctx, c.port)
	if err != nil {
		// pg_ctl may have given up while the server is still recovering: adopt it.
		if running, rerr := c.running(context.WithoutCancel(ctx)); rerr != nil || !running {
			return 0, err
		}
	}
	pid, _, err := readPostmasterPID(c.dataDir)
	if err != nil {
		return 0, err
	}
	c.setPID(pid)
	return pid, nil
}

// setPID records the postmaster's pid and moves an armed StopOnExit watchdog to it.
func (c *Cluster) setPID(pid int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pid == pid {
		return
	}
	c.pid = pid
	if c.disarm == nil || c.stopped {
		return
	}
	c.disarm()
	c.disarm = nil
	if d, err := startReaper(pid, c.dataDir, c.reaperDir); err == nil {
		c.disarm = sync.OnceFunc(d)
	} else {
		c.log.Warn("could not re-arm the exit watchdog for the restarted PostgreSQL", zap.Error(err))
	}
}

// startFailure is the reason a start failed, in one line: the last FATAL line of the
// server log (e.g. `lock file "postmaster.pid" already exists` while the dead postmaster
// is not reaped yet, or `pre-existing shared memory block is still in use` while its
// orphaned backends exit), else the first line of err.
func (c *Cluster) startFailure(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	var notLaunched notLaunchedError
	if errors.As(err, &notLaunched) { // pg_ctl did not run: the server log is older
		return line
	}
	lines := strings.Split(logTail(c.logPath()), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if _, fatal, ok := strings.Cut(lines[i], "FATAL:"); ok {
			return "FATAL: " + strings.TrimSpace(fatal)
		}
	}
	return line
}
