package mcpserve_test

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
	"testing"
	"time"

	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/mcpserve"
)

// BenchmarkListChangedFanoutSSE is BenchmarkListChangedFanout with light clients: each
// of the MCP_SESSIONS sessions (default 1,000) is opened over plain HTTP (initialize,
// notifications/initialized, the GET stream) and its stream is read line by line, the
// notification seen when its data line names notifications/prompts/list_changed. The Go
// SDK's client decodes each message into fresh 32 KiB buffers (about 100 KB allocated per
// notification) and runs a goroutine per notification: its 1,000 clients take three
// quarters and more of BenchmarkListChangedFanout's CPU (2026-11-27: 170–200 ms per
// change against this variant's 40–45 ms). This variant leaves the two cores to the
// server's fan-out, as editors in processes of their own would.
func BenchmarkListChangedFanoutSSE(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("MCP_SESSIONS")); err == nil && v > 0 {
		n = v
	}
	srv := testserver.Start(b, testserver.Options{QuietLogs: true, MCP: mcpserve.Options{MaxSessionsPerPrincipal: n}})
	mustStatus(b, srv.URL, "POST", "/_electric/entity-types", chatType, http.StatusCreated)
	mustStatus(b, srv.URL, "PUT", "/_electric/entities/chat/one", `{}`, http.StatusCreated)
	endpoint := srv.URL + "/_electric/entities/chat/one/mcp"

	var mu sync.Mutex
	var since time.Time
	var lat []time.Duration
	var first, spread []time.Duration
	var firstAt, lastAt time.Duration
	done := make(chan struct{}, n)
	notified := func() {
		mu.Lock()
		d := time.Since(since)
		lat = append(lat, d)
		if firstAt == 0 || d < firstAt {
			firstAt = d
		}
		lastAt = max(lastAt, d)
		mu.Unlock()
		done <- struct{}{}
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	var streams []io.Closer
	var readers sync.WaitGroup
	b.Cleanup(func() {
		for _, s := range streams {
			_ = s.Close()
		}
		readers.Wait()
		hc.CloseIdleConnections()
	})
	for i := range n {
		body, err := openSSESession(hc, endpoint)
		if err != nil {
			b.Fatalf("session %d: %v", i, err)
		}
		streams = append(streams, body)
		readers.Go(func() {
			r := bufio.NewReader(body)
			for {
				line, err := r.ReadSlice('\n')
				if err != nil {
					return
				}
				if strings.HasPrefix(string(line), "data:") && strings.Contains(string(line), "notifications/prompts/list_changed") {
					notified()
				}
			}
		})
	}
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
	change(0) // warm-up
	mu.Lock()
	lat, first, spread = lat[:0], first[:0], spread[:0]
	mu.Unlock()
	cpu0 := cpuTime()
	i := 1
	for b.Loop() {
		change(i)
		i++
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(i-1), "cpu-ms/op")
	slices.Sort(lat)
	slices.Sort(first)
	slices.Sort(spread)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	pct := func(ds []time.Duration, p float64) float64 { return ms(ds[int(p*float64(len(ds)-1))]) }
	b.ReportMetric(pct(lat, 0.50), "p50-ms")
	b.ReportMetric(pct(lat, 0.99), "p99-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
	b.ReportMetric(pct(first, 0.50), "first-p50-ms")
	b.ReportMetric(pct(spread, 0.50), "spread-p50-ms")
	b.ReportMetric(float64(n), "sessions")
}

// openSSESession opens an MCP session at endpoint as a client does (initialize, read to
// its end; notifications/initialized) and returns its GET notification stream, read up
// to its first event (the stream is attached from then on).
func openSSESession(hc *http.Client, endpoint string) (io.ReadCloser, error) {
	const version = "2025-11-25"
	post := func(body string, h ...string) (*http.Response, error) {
		req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for i := 0; i+1 < len(h); i += 2 {
			req.Header.Set(h[i], h[i+1])
		}
		return hc.Do(req)
	}
	resp, err := post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version +
		`","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		return nil, fmt.Errorf("initialize: %d", resp.StatusCode)
	}
	resp, err = post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, "Mcp-Session-Id", id, "Mcp-Protocol-Version", version)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return nil, fmt.Errorf("notifications/initialized: %d", resp.StatusCode)
	}
	req, err := http.NewRequest(http.MethodGet, endpoint, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", version)
	resp, err = hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET stream: %d", resp.StatusCode)
	}
	// the first event (the retry hint or the SDK's ": ok") says the stream is attached;
	// the rest is left in a reader that the caller's goroutine continues from
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			resp.Body.Close()
			return nil, fmt.Errorf("GET stream: %w", err)
		}
		if line == "\n" {
			return struct {
				io.Reader
				io.Closer
			}{br, resp.Body}, nil
		}
	}
}
