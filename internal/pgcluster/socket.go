package pgcluster

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// hbaLocalOnly is the whole pg_hba.conf of a SocketOnly cluster: Unix-socket connections
// only. With no host lines, a TCP connection is refused even if listen_addresses were
// changed behind our back (ALTER SYSTEM).
const hbaLocalOnly = `# Written by entityd (internal/pgcluster) at every start: edits are overwritten.
# Only Unix-socket connections, through a directory only the cluster's OS user can enter;
# there are deliberately no host lines, so TCP connections are refused.
local all all trust
`

// socketLockName is the longest file PostgreSQL creates in its socket directory (for the
// largest port number): the socket is .s.PGSQL.<port> and its lock file adds ".lock".
const socketLockName = ".s.PGSQL.65535.lock"

// maxSocketPath is the longest Unix socket path the kernel accepts, without the
// terminating NUL: sun_path is 108 bytes on Linux and 104 on the BSDs and macOS.
func maxSocketPath() int {
	if runtime.GOOS == "linux" {
		return 107
	}
	return 103
}

// socketDirFor returns the directory of a SocketOnly cluster's socket: the data
// directory itself (mode 0700, owned by the cluster's OS user) when the socket's lock
// file path fits in sun_path, else <os.TempDir()>/entityd-pg-<hash of the data
// directory>, a 0700 directory of the cluster's OS user recreated at every start.
func socketDirFor(dataDir string) (string, error) {
	if len(filepath.Join(dataDir, socketLockName)) <= maxSocketPath() {
		return dataDir, nil
	}
	sum := sha256.Sum256([]byte(dataDir))
	dir := filepath.Join(os.TempDir(), "entityd-pg-"+hex.EncodeToString(sum[:8]))
	if len(filepath.Join(dir, socketLockName)) > maxSocketPath() {
		return "", fmt.Errorf("pgcluster: the Unix socket path of %s would be too long both in the data directory and in %s; set TMPDIR to a shorter directory", dataDir, os.TempDir())
	}
	return dir, nil
}

// prepareSocketDir makes sure the socket directory exists, is a real directory (not a
// symbolic link) owned by the cluster's OS user and is mode 0700, just before the server
// starts. With recreate (we own the data directory exclusively and no server of it
// runs), a separate socket directory is deleted and made anew, and leftover socket and
// socket lock files in the data directory are removed; without it (a non-exclusive
// cluster another process may be starting at the same moment) a directory that passes
// the checks is kept as is.
func (c *Cluster) prepareSocketDir(recreate bool) error {
	dir := c.socketDir
	if dir == c.dataDir {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("pgcluster: %w", err)
		}
		if recreate {
			stale, _ := filepath.Glob(filepath.Join(dir, ".s.PGSQL.*"))
			for _, f := range stale {
				_ = os.Remove(f)
			}
		}
		return c.checkSocketDir(dir)
	}
	if err := c.user.checkReachable(filepath.Dir(dir)); err != nil {
		return err
	}
	if !recreate && c.checkSocketDir(dir) == nil {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("pgcluster: remove the old socket directory (it belongs to someone else? remove it or set TMPDIR): %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) && !recreate && c.checkSocketDir(dir) == nil {
			return nil // made at the same moment by a concurrent Start
		}
		return fmt.Errorf("pgcluster: create the socket directory: %w", err)
	}
	if err := c.user.chown(dir); err != nil {
		_ = os.Remove(dir)
		return fmt.Errorf("pgcluster: %w", err)
	}
	return c.checkSocketDir(dir)
}

// checkSocketDir verifies that dir is a directory (not a link) of mode 0700 owned by the
// cluster's OS user.
func (c *Cluster) checkSocketDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("pgcluster: socket directory: %w", err)
	}
	if !fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("pgcluster: socket directory %s is not a directory", dir)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		return fmt.Errorf("pgcluster: socket directory %s is mode %04o, want 0700", dir, perm)
	}
	if uid, ok := fileOwner(fi); ok && uid != c.user.uidOrSelf() {
		return fmt.Errorf("pgcluster: socket directory %s is owned by uid %d, want %d", dir, uid, c.user.uidOrSelf())
	}
	return nil
}

// removeSocketDir deletes a separate socket directory after the server stopped.
func (c *Cluster) removeSocketDir() {
	if c.socketDir != "" && c.socketDir != c.dataDir {
		_ = os.RemoveAll(c.socketDir)
	}
}

// writeHBA replaces pg_hba.conf with the local-only one.
func (c *Cluster) writeHBA() error {
	return c.writeFile(filepath.Join(c.dataDir, "pg_hba.conf"), hbaLocalOnly)
}

// socketURL is the DSN of db over the Unix socket in dir.
func socketURL(dir string, port int, db string) string {
	return "postgres://postgres@/" + url.PathEscape(db) + "?host=" + url.QueryEscape(dir) + "&port=" + strconv.Itoa(port) + "&sslmode=disable"
}

// postmasterLines returns the lines of the data directory's postmaster.pid.
func postmasterLines(dataDir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	return strings.Split(string(b), "\n"), nil
}

// checkReusable refuses to reuse a running server whose connection settings differ from
// the ones requested (postmaster.pid line 5 is the first socket directory, line 6 the
// first TCP address, each empty when there is none). A server still starting fills
// those lines in (and pads the file with empty lines meanwhile); they are final once
// line 8, the status, is there, and not checked before.
func (c *Cluster) checkReusable() error {
	lines, err := postmasterLines(c.dataDir)
	if err != nil {
		return err
	}
	lines = lines[:len(lines)-1] // complete lines only: the last element follows the last newline
	if len(lines) < 8 || strings.TrimSpace(lines[7]) == "" {
		return nil
	}
	hint := fmt.Sprintf("stop it first (%s stop -D %s)", filepath.Join(c.binDir, "pg_ctl"), c.dataDir)
	if c.socketOnly && strings.TrimSpace(lines[4]) != c.socketDir {
		return fmt.Errorf("pgcluster: the PostgreSQL running in %s has its Unix socket in %q, not %s; %s", c.dataDir, strings.TrimSpace(lines[4]), c.socketDir, hint)
	}
	if !c.socketOnly && strings.TrimSpace(lines[5]) == "" {
		return fmt.Errorf("pgcluster: the PostgreSQL running in %s does not listen on TCP; %s", c.dataDir, hint)
	}
	return nil
}
