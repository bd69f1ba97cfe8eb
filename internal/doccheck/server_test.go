package doccheck

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/internal/testbin"
)

// tourServer is entityd as `make run` starts it — the same binary, the demo entity types
// and the skills in ./skills, default settings — on a fresh database and a port of its
// own, so tours run beside the rest of `make test`.
type tourServer struct {
	url string
	mu  sync.Mutex
	out strings.Builder // the server's log
}

func (s *tourServer) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

func startServer(t *testing.T, root string) *tourServer {
	t.Helper()
	bin := testbin.Build(t, "github.com/entityd/entityd/cmd/server")
	// Port 0: the kernel picks a free port, which the server's "entityd listening" log
	// line names — no port can be taken between choosing and binding it.
	cmd := exec.Command(bin, "--addr", "127.0.0.1:0", "--log-format", "json")
	cmd.Dir = root // as `make run`: ./skills is the demo assistant's skills directory
	cmd.Env = append(environWithout("ENTITYD_", "DATABASE_URL"), "DATABASE_URL="+pgtest.URL(t))
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	srv := &tourServer{}
	listening := make(chan string, 1)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			srv.mu.Lock()
			srv.out.WriteString(line + "\n")
			srv.mu.Unlock()
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "entityd listening" {
				select {
				case listening <- rec.Addr:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, r)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil && !t.Failed() {
				t.Errorf("the server did not stop cleanly: %v\n%s", err, srv.log())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("the server did not stop within 30 s of SIGTERM")
		}
		<-copied
	})
	select {
	case addr := <-listening:
		_, port, _ := strings.Cut(addr, ":")
		srv.url = "http://localhost:" + port // what the README's commands use
		return srv
	case err := <-exited:
		t.Fatalf("the server exited before listening: %v\n%s", err, srv.log())
	case <-time.After(2 * time.Minute):
		t.Fatalf("the server did not listen within 2 minutes\n%s", srv.log())
	}
	return nil
}

// environWithout is the environment less the variables with one of these prefixes: a
// reader's ENTITYD_ADDR or ENTITYD_DEMO must not change what the test runs.
func environWithout(prefixes ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		keep := true
		for _, p := range prefixes {
			if strings.HasPrefix(kv, p) && !strings.HasPrefix(kv, "ENTITYD_TEST_") {
				keep = false
			}
		}
		if keep {
			env = append(env, kv)
		}
	}
	return env
}

// repoRoot is the module's root: the directory above this package that holds go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's directory")
		}
		dir = parent
	}
}

// markdownFiles lists the repository's Markdown files (relative, slash-separated),
// leaving out installed packages and hidden directories.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "node_modules" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
