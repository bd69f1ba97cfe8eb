package mcpserve_test

import (
	"context"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/mcpserve"
)

// BenchmarkListChangedFanout measures how long a slash-command change takes to reach
// every connected MCP session as notifications/prompts/list_changed: MCP_SESSIONS
// sessions (default 1,000, protocol 2025-11-25, each with its GET notification stream)
// on one entity; each iteration registers a dynamic command over HTTP and waits until
// every session was notified. Clients and server share this process (and its CPUs): the
// Go SDK's clients take about three quarters of its CPU, so the latencies follow any other
// load on the machine; BenchmarkListChangedFanoutSSE measures the server with light
// clients. Under load, compare builds by allocs/op and B/op (they do not move with it)
// and by cpu-ms/op between runs of similar load (contention raises it).
func BenchmarkListChangedFanout(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("MCP_SESSIONS")); err == nil && v > 0 {
		n = v
	}
	// every session is the dev principal's: lift its cap to n
	srv := testserver.Start(b, testserver.Options{QuietLogs: true, MCP: mcpserve.Options{MaxSessionsPerPrincipal: n}})
	mustStatus(b, srv.URL, "POST", "/_electric/entity-types", chatType, http.StatusCreated)
	mustStatus(b, srv.URL, "PUT", "/_electric/entities/chat/one", `{}`, http.StatusCreated)

	var mu sync.Mutex
	var since time.Time
	var lat []time.Duration // every session's, every iteration
	var first, spread []time.Duration
	var firstAt, lastAt time.Duration // this iteration's first and last notification
	done := make(chan struct{}, n)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: 0}}
	for i := range n {
		mc := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{
			PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
				mu.Lock()
				d := time.Since(since)
				lat = append(lat, d)
				if firstAt == 0 || d < firstAt {
					firstAt = d
				}
				lastAt = max(lastAt, d)
				mu.Unlock()
				done <- struct{}{}
			}})
		cs, err := mc.Connect(context.Background(), &mcp.StreamableClientTransport{
			Endpoint: srv.URL + "/_electric/entities/chat/one/mcp", HTTPClient: hc, MaxRetries: -1},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			b.Fatalf("session %d: %v", i, err)
		}
		b.Cleanup(func() { _ = cs.Close() })
	}
	// every session has its notification stream open once a change reaches them all
	change := func(i int) {
		mu.Lock()
		since, firstAt, lastAt = time.Now(), 0, 0
		mu.Unlock()
		mustStatus(b, srv.URL, "PUT", "/_electric/entities/chat/one/slash-commands/c"+strconv.Itoa(i)+"?owner=bench",
			`{"name":"c`+strconv.Itoa(i)+`"}`, http.StatusOK)
		for range n {
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				b.Fatal("a session was not notified within 30s")
			}
		}
		mu.Lock()
		first, spread = append(first, firstAt), append(spread, lastAt-firstAt)
		mu.Unlock()
	}
	change(0) // warm-up: streams attached
	mu.Lock()
	lat, first, spread = lat[:0], first[:0], spread[:0]
	mu.Unlock()
	cpu0 := cpuTime()
	i := 1
	for b.Loop() {
		change(i)
		i++
	}
	// the CPU this process (server and clients) spent per change: moved less than the
	// latencies by other work on the machine, but raised by it (142–330 ms on 2026-11-27)
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(i-1), "cpu-ms/op")
	slices.Sort(lat)
	slices.Sort(first)
	slices.Sort(spread)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	pct := func(ds []time.Duration, p float64) float64 { return ms(ds[int(p*float64(len(ds)-1))]) }
	b.ReportMetric(pct(lat, 0.50), "p50-ms")
	b.ReportMetric(pct(lat, 0.99), "p99-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
	// where the time goes: change → the first session notified (the PUT, the reload,
	// the SDK's 10 ms gathering), then first → last session (writing the 1,000 events)
	b.ReportMetric(pct(first, 0.50), "first-p50-ms")
	b.ReportMetric(pct(spread, 0.50), "spread-p50-ms")
	b.ReportMetric(float64(n), "sessions")
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func mustStatus(b *testing.B, base, method, path, body string, want int) {
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != want {
		b.Fatalf("%s %s: %d, want %d", method, path, resp.StatusCode, want)
	}
}
