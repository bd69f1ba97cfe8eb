//go:build unix

package pgcluster

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
)

// serverUser is the OS user PostgreSQL's binaries run as when this process is root
// (initdb, pg_ctl and postgres all refuse to run as root).
type serverUser struct {
	name     string
	uid, gid uint32
	groups   []uint32 // supplementary groups, for the traversal check
}

// lookupServerUser returns the postgres OS user when the process is root, nil otherwise.
func lookupServerUser() (*serverUser, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgcluster: this process is root and PostgreSQL refuses to run as root, so its binaries run as the `postgres` OS user, which does not exist (%v); install the postgresql package (it creates the user) or run as a non-root user", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("pgcluster: unexpected uid/gid %q/%q for the postgres OS user", u.Uid, u.Gid)
	}
	su := &serverUser{name: u.Username, uid: uint32(uid), gid: uint32(gid)}
	if ids, err := u.GroupIds(); err == nil {
		for _, id := range ids {
			if g, err := strconv.ParseUint(id, 10, 32); err == nil && uint32(g) != su.gid {
				su.groups = append(su.groups, uint32(g))
			}
		}
	}
	return su, nil
}

// apply makes cmd run as the server user (setuid/setgid directly, no runuser/su in
// between, so a cancelled context kills the PostgreSQL binary itself).
func (u *serverUser) apply(cmd *exec.Cmd) {
	if u == nil {
		return
	}
	groups := u.groups
	if groups == nil {
		groups = []uint32{}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.uid, Gid: u.gid, Groups: groups}}
}

func (u *serverUser) chown(path string) error {
	if u == nil {
		return nil
	}
	return os.Lchown(path, int(u.uid), int(u.gid))
}

// chownTree hands dir and everything below it to the server user, unless dir already
// belongs to it.
func (u *serverUser) chownTree(dir string) error {
	if u == nil {
		return nil
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid == u.uid {
		return nil
	}
	return filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, int(u.uid), int(u.gid))
	})
}

// checkReachable verifies that the server user can traverse dir and every directory
// above it (execute permission by owner, group or other bits; ACLs are not consulted).
func (u *serverUser) checkReachable(dir string) error {
	if u == nil {
		return nil
	}
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("pgcluster: %w", err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		perm := fi.Mode().Perm()
		var can bool
		switch {
		case st.Uid == u.uid:
			can = perm&0o100 != 0
		case st.Gid == u.gid || slices.Contains(u.groups, st.Gid):
			can = perm&0o010 != 0
		default:
			can = perm&0o001 != 0
		}
		if !can {
			owner := strconv.FormatUint(uint64(st.Uid), 10)
			if ou, err := user.LookupId(owner); err == nil {
				owner = ou.Username
			}
			return fmt.Errorf("pgcluster: the %s OS user cannot reach %s: %s is mode %04o owned by %s, and PostgreSQL runs as %s because this process is root; "+
				"put the data directory where every parent directory is traversable by %s, e.g. ENTITYD_DATA_DIR=/var/tmp/entityd",
				u.name, dir, d, perm, owner, u.name, u.name)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// processAlive reports whether process pid exists and is not a zombie (a process that
// exited and that its parent, often init, has not reaped yet: kill(pid, 0) succeeds on
// it, and some inits reap only every second or so).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return !zombie(pid)
}

// zombie reports whether /proc says pid has exited (state Z or X); false where there
// is no /proc.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may contain any
	// character, ")" included.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] == 'Z' || b[i+2] == 'X'
}

// reaperScript waits until its stdin reaches EOF (the parent process died: the parent
// holds the only write end of the pipe), then shuts the postmaster down immediately if
// postmaster.pid still names it, and removes the directory $3 if one was given.
const reaperScript = `while read -r _; do :; done
p=
{ read -r p < "$2/postmaster.pid"; } 2>/dev/null
if [ "$p" = "$1" ]; then
	kill -s QUIT "$1" 2>/dev/null
	n=0
	while kill -0 "$1" 2>/dev/null && [ "$n" -lt 300 ]; do sleep 0.1 2>/dev/null || sleep 1; n=$((n+1)); done
fi
if [ -n "$3" ]; then rm -rf -- "$3"; fi
`

// startReaper starts a detached shell (own session, so a terminal's Ctrl-C does not reach
// it) that cleans up after this process if it dies without stopping the cluster. The
// returned function disarms it.
func startReaper(postmasterPID int, dataDir, removeDir string) (disarm func(), err error) {
	cmd := exec.Command("/bin/sh", "-c", reaperScript, "pgcluster-reaper", strconv.Itoa(postmasterPID), dataDir, removeDir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Dir = "/"
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("pgcluster: start the cleanup watchdog: %w", err)
	}
	waited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(waited) }()
	return func() {
		_ = cmd.Process.Kill() // before closing stdin, which would trigger the cleanup
		<-waited
		_ = stdin.Close()
	}, nil
}

// lockFile opens (creating it) path and takes an exclusive, non-blocking flock on it.
// busy reports that another open file description holds it. The descriptor is
// close-on-exec, so no PostgreSQL process we start inherits the lock.
func lockFile(path string) (f *os.File, busy bool, err error) {
	f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, true, nil
		}
		return nil, false, err
	}
	return f, false, nil
}

// processExited reports whether the postmaster pid is gone. If this process is PID 1 or
// a subreaper, the postmaster that pg_ctl daemonized was reparented to us and would
// linger as a zombie (which kill(pid, 0) reports alive): reap it first. For any other
// process wait4 fails with ECHILD and changes nothing.
func processExited(pid int) bool {
	if pid <= 0 {
		return true
	}
	var ws syscall.WaitStatus
	if wpid, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); err == nil && wpid == pid {
		return true
	}
	return !processAlive(pid)
}

// fileOwner returns the uid that owns fi.
func fileOwner(fi fs.FileInfo) (uint32, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Uid, true
}

// uidOrSelf is the uid the cluster's files belong to: the server user's, or ours.
func (u *serverUser) uidOrSelf() uint32 {
	if u == nil {
		return uint32(os.Geteuid())
	}
	return u.uid
}
