package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/pgtest"
)

// Clients that trickle their headers or their body a byte at a time are cut off at the
// read timeouts, and while a hundred of them hold connections the server answers others
// at once.
func TestTrickledRequestsAreCutAtTheReadTimeouts(t *testing.T) {
	t.Parallel()
	p := startProcess(t, pgtest.URL(t), freePort(t), "--body-read-timeout", "500ms", "--read-header-timeout", "500ms")
	addr := strings.TrimPrefix(p.URL, "http://")
	require.Equal(t, http.StatusCreated, doStatus(t, http.MethodPut, p.URL+"/v1/stream/trickle", `[]`))

	type outcome struct {
		kind   string
		status string // the response's status line, if any
		took   time.Duration
	}
	const each = 50
	outcomes := make(chan outcome, 2*each)
	var wg sync.WaitGroup
	trickle := func(kind, head string) {
		defer wg.Done()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			outcomes <- outcome{kind: kind, status: "dial: " + err.Error()}
			return
		}
		defer conn.Close()
		start := time.Now()
		_, _ = io.WriteString(conn, head)
		closed := make(chan string, 1)
		go func() {
			line, _ := bufio.NewReader(conn).ReadString('\n')
			_, _ = io.Copy(io.Discard, conn) // until the server closes the connection
			closed <- strings.TrimSpace(line)
		}()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case line := <-closed:
				outcomes <- outcome{kind: kind, status: line, took: time.Since(start)}
				return
			case <-tick.C:
				if time.Since(start) > 15*time.Second {
					outcomes <- outcome{kind: kind, status: "still open", took: time.Since(start)}
					return
				}
				_, _ = conn.Write([]byte("x")) // one more byte, never enough
			}
		}
	}
	for range each {
		wg.Add(2)
		go trickle("header", "POST /v1/stream/trickle HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
		go trickle("body", "POST /v1/stream/trickle HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\n"+
			"Content-Length: 100000\r\n\r\n")
	}

	// Meanwhile, an ordinary client is served at once.
	start := time.Now()
	require.Equal(t, http.StatusOK, doStatus(t, http.MethodGet, p.URL+"/_electric/health", ""))
	require.Less(t, time.Since(start), 2*time.Second)

	wg.Wait()
	close(outcomes)
	counts := map[string]int{}
	for o := range outcomes {
		require.NotEqual(t, "still open", o.status, "%s trickle was never cut", o.kind)
		require.Less(t, o.took, 10*time.Second, "%s trickle cut late", o.kind)
		if o.kind == "body" {
			require.True(t, strings.HasPrefix(o.status, "HTTP/1.1 408"), "body trickle answered %q", o.status)
		}
		counts[o.kind]++
	}
	require.Equal(t, map[string]int{"header": each, "body": each}, counts)
	require.Equal(t, http.StatusOK, doStatus(t, http.MethodGet, p.URL+"/_electric/health", ""))
}

func doStatus(t *testing.T, method, url, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err, fmt.Sprintf("%s %s", method, url))
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode
}
