package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testbin"
	"github.com/entityd/entityd/internal/testserver"
)

// startProcess runs entityd-external against server with args until it says it serves.
func startProcess(t *testing.T, server string, args ...string) {
	t.Helper()
	cmd := exec.Command(testbin.Build(t, "github.com/entityd/entityd/cmd/entityd-external", "-race"), append([]string{"-server", server, "-skills-dir", t.TempDir()}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "serving the assistant type") {
				close(ready)
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("entityd-external stderr:\n%s", stderr.String())
		}
	})
	select {
	case <-ready:
	case <-exited:
		t.Fatalf("entityd-external exited during start:\n%s", stderr.String())
	case <-time.After(time.Minute):
		t.Fatalf("entityd-external did not start:\n%s", stderr.String())
	}
}

func request(t *testing.T, method, url, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, data
}

// replies reads the entity's reply texts: the deltas of its text_delta events, each
// checked to belong to a run that completed (the handler writes a reply as Electric's
// runtime does).
func replies(t *testing.T, base, url string) []string {
	t.Helper()
	status, body := request(t, http.MethodGet, base+url+"/main?offset=-1", "")
	require.Equal(t, http.StatusOK, status, "%s", body)
	var evs []struct {
		Type    string `json:"type"`
		Key     string `json:"key"`
		Headers struct {
			Operation string `json:"operation"`
		} `json:"headers"`
		Value struct {
			Status string `json:"status"`
			RunID  string `json:"run_id"`
			Delta  string `json:"delta"`
		} `json:"value"`
	}
	require.NoError(t, json.Unmarshal(body, &evs))
	completed := map[string]bool{}
	for _, ev := range evs {
		if ev.Type == "run" && ev.Headers.Operation == "update" && ev.Value.Status == "completed" {
			completed[ev.Key] = true
		}
	}
	var out []string
	for _, ev := range evs {
		if ev.Type == "text_delta" && completed[ev.Value.RunID] {
			out = append(out, ev.Value.Delta)
		}
	}
	return out
}

// TestAssistantOutsideTheServer runs the demo assistant, the code `make run` serves in
// the server, in a process of its own, as a webhook handler and as a runner: it answers
// composer_input messages the same way, in order.
func TestAssistantOutsideTheServer(t *testing.T) {
	for _, mode := range [][]string{{"-listen", "127.0.0.1:0"}, {"-runner", "laptop"}} {
		t.Run(mode[0], func(t *testing.T) {
			t.Parallel()
			srv := testserver.Start(t, testserver.Options{QuietLogs: true})
			startProcess(t, srv.URL, mode...)
			status, body := request(t, http.MethodPut, srv.URL+"/_electric/entities/assistant/a1", `{}`)
			require.Equal(t, http.StatusCreated, status, "%s", body)
			msgs := []string{"/search retries", "plain words", "/quickstart"}
			for i, m := range msgs {
				name, _, _ := strings.Cut(strings.TrimPrefix(m, "/"), " ")
				nodes := "[]"
				if strings.HasPrefix(m, "/") {
					nodes = `[{"kind":"slash_command","start":0,"end":` + strconv.Itoa(len(name)+1) + `,"raw":"/` + name + `","name":"` + name + `"}]`
				}
				status, body = request(t, http.MethodPost, srv.URL+"/_electric/entities/assistant/a1/send",
					`{"type":"composer_input","key":"k`+strconv.Itoa(i)+`","payload":{"source":"`+m+`","nodes":`+nodes+`}}`)
				require.Equal(t, http.StatusOK, status, "%s", body)
			}
			var got []string
			deadline := time.Now().Add(30 * time.Second)
			for len(got) < len(msgs) && time.Now().Before(deadline) {
				// wait for the stream to move, then read it
				request(t, http.MethodGet, srv.URL+"/assistant/a1/main?offset=now&live=long-poll", "")
				got = replies(t, srv.URL, "/assistant/a1")
			}
			require.Equal(t, []string{
				`Command /search with input "retries"; text "/search retries".`,
				`No command; text "plain words".`,
				`Command /quickstart; text "/quickstart".`,
			}, got)
		})
	}
}
