package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/entityd/entityd/internal/pgtest"
)

// BenchmarkSIGTERMWithMCPSessions measures how long a real entityd process takes to exit
// after SIGTERM while MCP_SESSIONS (default 1,000) MCP sessions are connected, each the
// way the TypeScript SDK holds one: initialize (its answer read to the end),
// notifications/initialized, then the standalone GET notification stream, held open.
// When a stream ends the client reconnects with Last-Event-ID after the server's retry
// hint, up to twice (the TypeScript SDK's default), as an editor would.
//
// The sessions belong to MCP_SESSIONS/100 principals (dev mode, Electric-Principal), 100
// each — the server's default cap per principal — on one entity per principal. Each
// iteration starts a fresh process on a fresh database; only SIGTERM → exit is timed.
// Metrics: p50-ms and max-ms of the exit times, streams-ms (SIGTERM → the last stream
// ended, seen by the clients), and the iteration count; a non-zero exit status fails.
// To see where a slow shutdown waits, MCP_STOP_DUMP=<duration> saves the server's
// goroutines (its debug server's pprof) that long after SIGTERM to a file it names.
//
//	go run ./internal/tools/withpg -- go test -run '^$' -bench SIGTERMWithMCPSessions -benchtime 5x ./cmd/server
func BenchmarkSIGTERMWithMCPSessions(b *testing.B) {
	n := envInt("MCP_SESSIONS", 1000)
	const perPrincipal = 100
	dumpAfter, _ := time.ParseDuration(os.Getenv("MCP_STOP_DUMP"))
	var exits, streamsEnded []time.Duration
	for b.Loop() {
		b.StopTimer()
		var extra []string
		debugAddr := fmt.Sprintf("127.0.0.1:%d", freePort(b))
		if dumpAfter > 0 {
			extra = append(extra, "--debug-addr", debugAddr)
		}
		p := startProcess(b, pgtest.URL(b), freePort(b), extra...)
		run := openMCPSessions(b, p.URL, n, perPrincipal)
		if dumpAfter > 0 {
			time.AfterFunc(dumpAfter, func() { dumpGoroutines(b, debugAddr, len(exits)) })
		}

		b.StartTimer()
		start := time.Now()
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			b.Fatal(err)
		}
		select {
		case <-p.done:
		case <-time.After(40 * time.Second): // past the 30 s shutdown timeout
			b.Fatal("entityd still running 40 s after SIGTERM")
		}
		exit := time.Since(start)
		b.StopTimer()

		if !p.cmd.ProcessState.Success() {
			b.Errorf("exit status %v after SIGTERM; log:\n%s", p.cmd.ProcessState, p.logText())
		}
		last := run.finish()
		exits = append(exits, exit)
		streamsEnded = append(streamsEnded, last.Sub(start))
		b.Logf("exit %v after SIGTERM (status %d), last stream ended at %v; reconnects after it: %d refused, %d answered",
			exit.Round(time.Millisecond), p.cmd.ProcessState.ExitCode(), last.Sub(start).Round(time.Millisecond),
			run.refused.Load(), run.answered.Load())
		if os.Getenv("MCP_STOP_LOG") != "" { // what the server logged, to see where its shutdown went
			b.Logf("SIGTERM sent at %s; log:\n%s", start.UTC().Format(time.RFC3339Nano), p.logText())
		}
		b.StartTimer()
	}
	slices.Sort(exits)
	slices.Sort(streamsEnded)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(exits[(len(exits)-1)/2]), "p50-ms")
	b.ReportMetric(ms(exits[len(exits)-1]), "max-ms")
	b.ReportMetric(ms(streamsEnded[len(streamsEnded)-1]), "streams-ms")
	b.ReportMetric(float64(n), "sessions")
}

// dumpGoroutines saves the goroutines of the server whose debug server is at addr.
func dumpGoroutines(b *testing.B, addr string, i int) {
	resp, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		b.Logf("goroutine dump: %v", err)
		return
	}
	defer resp.Body.Close()
	path := fmt.Sprintf("%s/mcpstop-goroutines-%d.txt", os.TempDir(), i)
	f, err := os.Create(path)
	if err == nil {
		_, err = io.Copy(f, resp.Body)
		f.Close()
	}
	b.Logf("goroutines %v after SIGTERM: %s (%v)", os.Getenv("MCP_STOP_DUMP"), path, err)
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// mcpLoad is a set of MCP sessions whose notification streams are open.
type mcpLoad struct {
	hc       *http.Client
	wg       sync.WaitGroup
	mu       sync.Mutex
	last     time.Time    // when the last stream ended
	refused  atomic.Int64 // reconnects the server did not answer (it had stopped listening)
	answered atomic.Int64 // reconnects it answered (any status)
}

// finish waits for every client to give up on its stream and returns when the last
// stream ended.
func (l *mcpLoad) finish() time.Time {
	l.wg.Wait()
	l.hc.CloseIdleConnections()
	return l.last
}

const mcpBenchVersion = "2025-11-25"

// openMCPSessions opens n sessions on base, perPrincipal for each principal
// user:mcpstop-<k>, each principal on an entity of its own (mcpstop/p<k>), and returns
// once every session's GET stream is open.
func openMCPSessions(b *testing.B, base string, n, perPrincipal int) *mcpLoad {
	b.Helper()
	l := &mcpLoad{hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: 0}}}
	do := func(method, path, body string, h ...string) (*http.Response, error) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(h); i += 2 {
			req.Header.Set(h[i], h[i+1])
		}
		return l.hc.Do(req)
	}
	want := func(resp *http.Response, err error, status int, what string) {
		b.Helper()
		if err != nil {
			b.Fatalf("%s: %v", what, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != status {
			b.Fatalf("%s: %d, want %d: %s", what, resp.StatusCode, status, body)
		}
	}
	principals := (n + perPrincipal - 1) / perPrincipal
	resp, err := do("POST", "/_electric/entity-types", `{"name":"mcpstop","description":"MCP sessions at SIGTERM"}`)
	want(resp, err, http.StatusCreated, "create the type")
	for k := range principals {
		resp, err := do("POST", "/_electric/entity-types/mcpstop/grants",
			fmt.Sprintf(`{"subject_kind":"principal","subject_value":"user:mcpstop-%d","permission":"spawn"}`, k))
		want(resp, err, http.StatusCreated, "grant spawn")
		resp, err = do("PUT", fmt.Sprintf("/_electric/entities/mcpstop/p%d", k), `{}`,
			"Electric-Principal", fmt.Sprintf("user:mcpstop-%d", k))
		want(resp, err, http.StatusCreated, "create an entity")
	}

	// 32 at a time: a crowd of editors connecting, not a stampede
	work := make(chan int)
	errs := make(chan error, n)
	var open sync.WaitGroup
	for range 32 {
		open.Go(func() {
			for i := range work {
				k := i / perPrincipal
				if err := l.session(do, base, fmt.Sprintf("/_electric/entities/mcpstop/p%d/mcp", k),
					fmt.Sprintf("user:mcpstop-%d", k)); err != nil {
					errs <- fmt.Errorf("session %d: %w", i, err)
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	open.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return l
}

// session opens one session on path and its GET stream, and leaves a goroutine reading
// the stream until it ends (and the reconnects after it).
func (l *mcpLoad) session(do func(string, string, string, ...string) (*http.Response, error), base, path, who string) error {
	resp, err := do("POST", path, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+mcpBenchVersion+
		`","capabilities":{},"clientInfo":{"name":"mcpstop-bench","version":"1"}}}`,
		"Accept", "application/json, text/event-stream", "Electric-Principal", who)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body) // the session is ready once its answer ends
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		return fmt.Errorf("initialize: %d, session %q", resp.StatusCode, id)
	}
	headers := []string{"Mcp-Session-Id", id, "Mcp-Protocol-Version", mcpBenchVersion, "Electric-Principal", who}
	resp, err = do("POST", path, `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		append(headers, "Accept", "application/json, text/event-stream")...)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("notifications/initialized: %d", resp.StatusCode)
	}
	get := func(lastEventID string) (*http.Response, error) {
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "text/event-stream")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		if lastEventID != "" {
			req.Header.Set("Last-Event-ID", lastEventID)
		}
		return l.hc.Do(req)
	}
	stream, err := get("")
	if err != nil {
		return err
	}
	if stream.StatusCode != http.StatusOK {
		stream.Body.Close()
		return fmt.Errorf("GET stream: %d", stream.StatusCode)
	}
	r := bufio.NewReader(stream.Body)
	retry, lastID := time.Second, ""
	// the stream is open once its first event (the retry hint, or the SDK's ": ok") came
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			stream.Body.Close()
			return fmt.Errorf("GET stream ended before its first event: %w", err)
		}
		retry, lastID = sseField(line, retry, lastID)
		if line == "\n" {
			break
		}
	}
	l.wg.Go(func() {
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				break
			}
			retry, lastID = sseField(line, retry, lastID)
		}
		stream.Body.Close()
		l.mu.Lock()
		if now := time.Now(); now.After(l.last) {
			l.last = now
		}
		l.mu.Unlock()
		// the TypeScript SDK reconnects after the hint, then 1.5× longer, twice at most
		for range 2 {
			time.Sleep(retry)
			resp, err := get(lastID)
			if err != nil {
				l.refused.Add(1)
				retry = retry * 3 / 2
				continue
			}
			l.answered.Add(1)
			_, _ = io.Copy(io.Discard, resp.Body) // a server still up ends it at once or refuses it
			resp.Body.Close()
			return
		}
	})
	return nil
}

// sseField reads a retry or id field from one line of an event stream.
func sseField(line string, retry time.Duration, id string) (time.Duration, string) {
	line = strings.TrimRight(line, "\r\n")
	if v, ok := strings.CutPrefix(line, "retry:"); ok {
		if ms, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			retry = time.Duration(ms) * time.Millisecond
		}
	}
	if v, ok := strings.CutPrefix(line, "id:"); ok {
		id = strings.TrimSpace(v)
	}
	return retry, id
}
