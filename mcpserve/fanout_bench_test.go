package mcpserve_test

import (
	"context"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
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
// every session was notified. Clients and server share this process (and its CPUs).
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
	var lat []time.Duration
	done := make(chan struct{}, n)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: 0}}
	for i := range n {
		mc := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{
			PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
				mu.Lock()
				lat = append(lat, time.Since(since))
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
		since = time.Now()
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
	}
	change(0) // warm-up: streams attached
	mu.Lock()
	lat = lat[:0]
	mu.Unlock()
	i := 1
	for b.Loop() {
		change(i)
		i++
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
	b.ReportMetric(float64(n), "sessions")
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
