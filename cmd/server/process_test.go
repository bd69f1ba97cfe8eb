package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testwait"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// serverBinary builds this command once per test run.
func serverBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "entityd-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "entityd")
		out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return builtBin
}

// process is a real entityd process on a loopback port.
type process struct {
	t    testing.TB
	cmd  *exec.Cmd
	URL  string
	done chan struct{}
	log  string
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startProcess starts entityd against dbURL on port and waits until it is healthy.
func startProcess(t testing.TB, dbURL string, port int, extra ...string) *process {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "server.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	args := append([]string{"--addr", fmt.Sprintf("127.0.0.1:%d", port), "--no-demo", "--log-format", "json",
		"--long-poll-timeout", "1s"}, extra...)
	cmd := exec.Command(serverBinary(t), args...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(t, cmd.Start())
	p := &process{t: t, cmd: cmd, URL: fmt.Sprintf("http://127.0.0.1:%d", port), done: make(chan struct{}), log: logPath}
	go func() { _ = cmd.Wait(); logFile.Close(); close(p.done) }()
	t.Cleanup(func() { p.kill() })
	defer func() { // also when the wait below fails the test
		if t.Failed() {
			t.Logf("entityd log:\n%s", p.logText())
		}
	}()
	testwait.Until(t, "entityd to answer its health check", func() bool {
		select {
		case <-p.done:
			t.Fatal("entityd exited during start")
		default:
		}
		resp, err := http.Get(p.URL + "/_electric/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second)
	return p
}

func (p *process) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

func (p *process) logText() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// stop sends SIGTERM and waits for a clean exit.
func (p *process) stop(ctx context.Context) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if !p.cmd.ProcessState.Success() {
			return fmt.Errorf("exit status %v", p.cmd.ProcessState)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
