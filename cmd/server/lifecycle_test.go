package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/internal/testwait"
)

// emptyDatabase returns a database with nothing in it (pgtest's are migrated).
func emptyDatabase(t *testing.T) string {
	url := pgtest.URL(t)
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(context.Background(), `DROP SCHEMA public CASCADE; CREATE SCHEMA public`)
	require.NoError(t, err)
	return url
}

func TestTwoServersStartingAtOnceMigrateOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	dbURL := emptyDatabase(t)
	var wg sync.WaitGroup
	procs := make([]*process, 2)
	for i := range procs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			procs[i] = startProcess(t, dbURL, freePort(t))
		}(i)
	}
	wg.Wait()
	// Both serve the same database: a type registered through one is visible through the other.
	resp, err := http.Post(procs[0].URL+"/_electric/entity-types", "application/json",
		strings.NewReader(`{"name":"shared","description":"seen by both servers"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	resp, err = http.Get(procs[1].URL + "/_electric/entity-types/shared")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestMigrateSubcommand(t *testing.T) {
	dbURL := emptyDatabase(t)
	cmd := exec.Command(serverBinary(t), "migrate", "--log-format", "json")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "database migrated")
	conn, err := pgx.Connect(context.Background(), dbURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var n int
	require.NoError(t, conn.QueryRow(context.Background(),
		`SELECT count(*) FROM information_schema.tables WHERE table_name IN ('streams', 'entities', 'entity_types')`).Scan(&n))
	require.Equal(t, 3, n)
}

func TestSIGTERMEndsLiveReadsAndExitsCleanly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	p := startProcess(t, pgtest.URL(t), freePort(t), "--long-poll-timeout", "60s")
	resp, err := http.DefaultClient.Do(mustRequest(t, http.MethodPut, p.URL+"/v1/stream/shutdown", "text/plain"))
	require.NoError(t, err)
	resp.Body.Close()
	tail := resp.Header.Get("Stream-Next-Offset")

	got := make(chan int, 1)
	go func() {
		resp, err := http.Get(p.URL + "/v1/stream/shutdown?live=long-poll&offset=" + tail)
		if err != nil {
			got <- -1
			return
		}
		resp.Body.Close()
		got <- resp.StatusCode
	}()
	// The long-poll is parked once the server's gauge says so.
	testwait.Until(t, "the long-poll parks", func() bool {
		resp, err := http.Get(p.URL + "/_electric/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(body), "\nentityd_long_polls_waiting 1\n")
	}, 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, p.stop(ctx), "SIGTERM exits with status 0 well before the 60s long-poll timeout")
	require.Equal(t, http.StatusNoContent, <-got, "the parked long-poll is answered, not cut")
}

// A connection that has not sent a request yet (an HTTP client's spare dial, a
// preconnect) does not hold the exit up: net/http alone counts it as busy until it is 5 s
// old, so SIGTERM took 5–6 s with one open.
func TestSIGTERMIsNotHeldByAConnectionThatSendsNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	p := startProcess(t, pgtest.URL(t), freePort(t))
	c, err := net.Dial("tcp", strings.TrimPrefix(p.URL, "http://"))
	require.NoError(t, err)
	defer c.Close()
	time.Sleep(100 * time.Millisecond) // accepted by now
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	start := time.Now()
	require.NoError(t, p.stop(ctx), "SIGTERM exits with status 0 well before the connection is 5 s old")
	t.Logf("exited %s after SIGTERM with a connection open that sent nothing", time.Since(start).Round(time.Millisecond))
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	_, err = c.Read(make([]byte, 1))
	require.Error(t, err, "the server closed the connection")
}

func TestBadConfigurationIsReported(t *testing.T) {
	cmd := exec.Command(serverBinary(t), "--long-poll-timeout", "soon")
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "long-poll-timeout")

	cmd = exec.Command(serverBinary(t))
	cmd.Env = append(os.Environ(), "ENTITYD_MAX_BODY_BYTES=lots")
	out, err = cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "ENTITYD_MAX_BODY_BYTES must be a positive integer")
}

func mustRequest(t *testing.T, method, url, contentType string) *http.Request {
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	req.Header.Set("Content-Type", contentType)
	return req
}
