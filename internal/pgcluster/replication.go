//go:build unix

package pgcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// StandbyConninfo is the primary_conninfo a standby of c uses, naming itself appName
// (what the primary's synchronous_standby_names lists).
func (c *Cluster) StandbyConninfo(appName string) string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=postgres application_name=%s", c.port, appName)
}

// BaseBackup copies this (running) cluster into dir with pg_basebackup, streaming the
// WAL it needs, and marks the copy as a standby (standby.signal). Start it with
// Settings{"primary_conninfo": c.StandbyConninfo(name)} to have it follow c. The
// primary must allow replication connections (initdb's default pg_hba does, on
// 127.0.0.1) and run with wal_level replica or higher.
func (c *Cluster) BaseBackup(ctx context.Context, dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if err := c.user.checkReachable(filepath.Dir(dir)); err != nil {
		return err
	}
	if _, err := c.run(ctx, "pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(c.port), "-U", "postgres",
		"-D", dir, "-X", "stream", "-c", "fast", "--no-password"); err != nil {
		return err
	}
	signal := filepath.Join(dir, "standby.signal")
	if err := os.WriteFile(signal, nil, 0o600); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if err := c.user.chown(signal); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	return nil
}

// Kill ends the postmaster with SIGKILL, as a crash or a lost machine would: no
// shutdown checkpoint, clients see their connections fail. Its backends exit when
// they notice.
func (c *Cluster) Kill() error {
	pid, _, err := readPostmasterPID(c.dataDir)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("pgcluster: kill the postmaster (pid %d): %w", pid, err)
	}
	return nil
}
