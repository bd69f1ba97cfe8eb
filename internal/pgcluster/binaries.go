package pgcluster

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ErrNotInstalled is returned by FindBinaries and Start when no PostgreSQL server
// binaries can be found. Its message is a single line that names the install command.
var ErrNotInstalled = errors.New("PostgreSQL server binaries not found (looked in `pg_config --bindir`, /usr/lib/postgresql/*/bin and $PATH); install them with: sudo apt-get install -y postgresql")

// serverBinaries must all be present in a directory for it to count as a server install.
var serverBinaries = []string{"initdb", "pg_ctl", "postgres"}

// FindBinaries returns the directory that holds initdb, pg_ctl and postgres: the output of
// `pg_config --bindir` if it has them, else the highest-versioned /usr/lib/postgresql/*/bin
// (Debian/Ubuntu keep the server binaries off $PATH), else the directory of initdb on $PATH.
// It returns ErrNotInstalled if none qualifies.
func FindBinaries() (dir string, err error) {
	return findBinaries("/usr/lib/postgresql")
}

func findBinaries(debianRoot string) (string, error) {
	if pgConfig, err := exec.LookPath("pg_config"); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		out, err := exec.CommandContext(ctx, pgConfig, "--bindir").Output()
		cancel()
		if err == nil {
			if dir := strings.TrimSpace(string(out)); hasServerBinaries(dir) {
				return dir, nil
			}
		}
	}
	if dirs, _ := filepath.Glob(filepath.Join(debianRoot, "*", "bin")); len(dirs) > 0 {
		sort.Slice(dirs, func(i, j int) bool { // highest version first
			return versionLess(filepath.Base(filepath.Dir(dirs[j])), filepath.Base(filepath.Dir(dirs[i])))
		})
		for _, dir := range dirs {
			if hasServerBinaries(dir) {
				return dir, nil
			}
		}
	}
	if initdb, err := exec.LookPath("initdb"); err == nil {
		if dir := filepath.Dir(initdb); hasServerBinaries(dir) {
			return dir, nil
		}
	}
	return "", ErrNotInstalled
}

func hasServerBinaries(dir string) bool {
	if dir == "" {
		return false
	}
	for _, name := range serverBinaries {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			return false
		}
	}
	return true
}

// versionLess compares PostgreSQL major versions such as "9.6", "15" and "17" numerically.
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x < y
		}
	}
	return a < b
}
