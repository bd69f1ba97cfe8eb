// Package testbin builds a command of this module once per test binary, for tests that
// run it as a process of its own.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

type build struct {
	once sync.Once
	bin  string
	err  error
}

var (
	mu     sync.Mutex
	builds = map[string]*build{}
)

// Build returns the path of pkg (an import path) built with flags (e.g. "-race"); the
// first call builds it, later calls with the same arguments reuse the binary.
func Build(t testing.TB, pkg string, flags ...string) string {
	t.Helper()
	key := pkg + " " + strings.Join(flags, " ")
	mu.Lock()
	b := builds[key]
	if b == nil {
		b = &build{}
		builds[key] = b
	}
	mu.Unlock()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", path.Base(pkg)+"-bin-")
		if err != nil {
			b.err = err
			return
		}
		b.bin = filepath.Join(dir, path.Base(pkg))
		args := append(append([]string{"build"}, flags...), "-o", b.bin, pkg)
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}
