package acp_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testbin"
)

// TestBinary runs `entityd acp` as an editor would: a process of its own, protocol on
// stdin/stdout, logs on stderr.
func TestBinary(t *testing.T) {
	srv := startServer(t)
	bin := testbin.Build(t, "github.com/entityd/entityd/cmd/server")
	cmd := exec.Command(bin, "acp", "--entity", "assistant/bin1", "--server", srv.URL, "--spawn", "--log-level", "debug")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)

	// Every line the process writes on stdout must be a JSON-RPC message.
	var mu sync.Mutex
	var bad []string
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			var m struct {
				JSONRPC string `json:"jsonrpc"`
			}
			if json.Unmarshal(sc.Bytes(), &m) != nil || m.JSONRPC != "2.0" {
				mu.Lock()
				bad = append(bad, sc.Text())
				mu.Unlock()
			}
			_, _ = pw.Write(append(sc.Bytes(), '\n'))
		}
		_ = pw.Close()
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill() // only matters when the test failed before the process exited
		if t.Failed() {
			t.Logf("entityd acp stderr:\n%s", stderr.String())
		}
	})

	rec := newRecorder()
	ed := &editor{ClientSideConnection: sdk.NewClientSideConnection(rec, stdin, pr), rec: rec}
	ed.initialize(t)
	id, s := ed.newSession(t, nil)
	require.Equal(t, staticCommands, commands(s.nextCommands(t)))
	stop, err := ed.prompt(t, id, sdk.TextBlock("/quickstart now"))
	require.NoError(t, err)
	require.Equal(t, sdk.StopReasonEndTurn, stop)
	require.Contains(t, strings.Join(s.reply(), ""), `Command /quickstart with input "now"`)

	require.NoError(t, stdin.Close()) // the editor goes away: the adapter exits 0
	select {
	case err := <-exited:
		require.NoError(t, err)
	case <-time.After(waitLimit):
		_ = cmd.Process.Kill()
		t.Fatal("entityd acp did not exit after its stdin closed")
	}
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, bad, "stdout carried lines that are not JSON-RPC")
	require.Contains(t, stderr.String(), "session attached", "logs go to stderr")
}
