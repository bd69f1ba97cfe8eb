package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/pgcluster"
	"github.com/entityd/entityd/internal/testwait"
)

// sendLoad sends messages with unique keys to entities, from one goroutine per entity,
// until stop is closed, and keeps what was acknowledged and how everything was answered.
type sendLoad struct {
	base     string
	entities []string
	client   *http.Client

	mu        sync.Mutex
	acked     map[string][]string // entity -> keys answered 200, in order
	statuses  map[int]int
	noRetry   int // 503s without Retry-After
	firstDown time.Time
	lastDown  time.Time
	okAfter   atomic.Int64 // 200s seen after the last 503 (recovery)
}

func newSendLoad(base string, entities []string) *sendLoad {
	return &sendLoad{base: base, entities: entities, client: &http.Client{Timeout: 10 * time.Second},
		acked: map[string][]string{}, statuses: map[int]int{}}
}

func (l *sendLoad) run(stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for _, e := range l.entities {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("m-%06d", n)
				body := fmt.Sprintf(`{"type":"note","key":%q,"payload":{"n":%d}}`, key, n)
				req, _ := http.NewRequest(http.MethodPost, l.base+"/_electric/entities"+e+"/send", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				status := l.send(e, key, req)
				if status != http.StatusOK {
					// Paces the client: it backs off before the next try, as one honouring
					// Retry-After would, only faster.
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}
	return &wg
}

// send makes one request and records its answer (-1: no answer).
func (l *sendLoad) send(entity, key string, req *http.Request) int {
	res, err := l.client.Do(req)
	if err != nil {
		l.record(entity, key, -1, "")
		return -1
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	l.record(entity, key, res.StatusCode, res.Header.Get("Retry-After"))
	return res.StatusCode
}

func (l *sendLoad) record(entity, key string, status int, retryAfter string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.statuses[status]++
	switch status {
	case http.StatusOK:
		l.acked[entity] = append(l.acked[entity], key)
		if !l.lastDown.IsZero() {
			l.okAfter.Add(1)
		}
	case http.StatusServiceUnavailable:
		if retryAfter == "" {
			l.noRetry++
		}
		if l.firstDown.IsZero() {
			l.firstDown = time.Now()
		}
		l.lastDown = time.Now()
		l.okAfter.Store(0)
	}
}

func (l *sendLoad) count(status int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.statuses[status]
}

// requireAllAckedPresent reads every entity's stream and checks that each acknowledged
// key is there.
func (l *sendLoad) requireAllAckedPresent(t *testing.T) int {
	t.Helper()
	total := 0
	for _, e := range l.entities {
		present := map[string]bool{}
		offset := "-1"
		for {
			res, err := l.client.Get(l.base + e + "/main?offset=" + offset)
			require.NoError(t, err)
			var events []struct {
				Type string `json:"type"`
				Key  string `json:"key"`
			}
			require.Equal(t, http.StatusOK, res.StatusCode)
			require.NoError(t, json.NewDecoder(res.Body).Decode(&events))
			res.Body.Close()
			for _, ev := range events {
				if ev.Type == "inbox" {
					present[ev.Key] = true
				}
			}
			offset = res.Header.Get("Stream-Next-Offset")
			if res.Header.Get("Stream-Up-To-Date") == "true" {
				break
			}
		}
		for _, k := range l.acked[e] {
			require.True(t, present[k], "acknowledged send %s %s is missing", e, k)
		}
		total += len(l.acked[e])
	}
	return total
}

// TestPostgresKilledUnderLoad kills the Postgres postmaster while clients send: every
// request meanwhile gets 503 with Retry-After (never a 500), the outage is logged once and
// without stack traces, entityd recovers by itself once Postgres is back, and nothing
// acknowledged is lost.
func TestPostgresKilledUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts a Postgres cluster")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tmp, err := pgcluster.MkdirTemp("", "entityd-dbfault-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	dataDir := filepath.Join(tmp, "pg")
	opts := pgcluster.Options{DataDir: dataDir, Database: "entityd", Fsync: true}
	cluster, err := pgcluster.Start(ctx, opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		if c, err := pgcluster.Start(context.Background(), opts); err == nil {
			_ = c.Stop(context.Background())
		}
		_ = cluster.Stop(context.Background())
	})

	p := startProcess(t, cluster.URL(), freePort(t))
	requireOK(t, http.MethodPost, p.URL+"/_electric/entity-types", `{"name":"note","description":"d"}`, http.StatusCreated)
	var entities []string
	for i := range 8 {
		requireOK(t, http.MethodPut, fmt.Sprintf("%s/_electric/entities/note/n%d", p.URL, i), `{}`, http.StatusCreated)
		entities = append(entities, fmt.Sprintf("/note/n%d", i))
	}

	load := newSendLoad(p.URL, entities)
	stop := make(chan struct{})
	wg := load.run(stop)
	testwait.Until(t, "load running", func() bool { return load.count(http.StatusOK) >= 200 }, 10*time.Second)

	pid := postmasterPID(t, dataDir)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	killedAt := time.Now()
	testwait.Until(t, "503s during the outage", func() bool { return load.count(http.StatusServiceUnavailable) >= 50 }, 20*time.Second)
	testwait.Until(t, "postmaster gone", func() bool { return !processAlive(pid) }, 20*time.Second)

	// Postgres comes back (an operator, systemd, or the embedded supervisor restarts it).
	restarted, err := pgcluster.Start(ctx, opts)
	require.NoError(t, err)
	upAt := time.Now()
	t.Cleanup(func() { _ = restarted.Stop(context.Background()) })
	testwait.Until(t, "sends succeed again", func() bool { return load.okAfter.Load() >= int64(20*len(entities)) }, 30*time.Second)
	recovered := time.Since(upAt)
	close(stop)
	wg.Wait()

	require.Zero(t, load.count(http.StatusInternalServerError), "no 500s: %v", load.statuses)
	for status := range load.statuses {
		require.Contains(t, []int{http.StatusOK, http.StatusServiceUnavailable}, status, "statuses: %v", load.statuses)
	}
	require.Zero(t, load.noRetry, "every 503 carries Retry-After")
	acked := load.requireAllAckedPresent(t)

	// Requests may succeed again before the outage probe (every 250 ms) has seen the
	// database back and logged it: wait for that line rather than race it.
	testwait.Until(t, "the end of the outage to be logged", func() bool {
		return strings.Contains(p.logText(), "database available again")
	}, 10*time.Second)
	logText := p.logText()
	require.Equal(t, 1, strings.Count(logText, "database unavailable: answering 503"), "one line per outage")
	require.NotContains(t, logText, `"stacktrace"`)
	t.Logf("outage: postmaster killed, %d requests answered 503 (first after %v); Postgres back after %v; "+
		"entityd serving again %v later without a restart; %d sends acknowledged, all present; log %d bytes",
		load.count(http.StatusServiceUnavailable), load.firstDown.Sub(killedAt).Round(time.Millisecond),
		upAt.Sub(killedAt).Round(time.Millisecond), recovered.Round(time.Millisecond), acked, len(logText))
}

func requireOK(t *testing.T, method, url, body string, want int) {
	t.Helper()
	require.Equal(t, want, doStatus(t, method, url, body), "%s %s", method, url)
}

func postmasterPID(t *testing.T, dataDir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	require.NoError(t, err)
	return pid
}

func processAlive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}
