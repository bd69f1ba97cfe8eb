package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// commonFlags are the flags every benchmark has.
type commonFlags struct {
	url     string
	jsonOut bool
	out     string
	label   string
	gzip    bool
	token   string
}

func (c *commonFlags) register(fs *flag.FlagSet, defaultURL string) {
	fs.StringVar(&c.url, "url", defaultURL, "base URL of the server")
	fs.BoolVar(&c.jsonOut, "json", false, "print the result as one JSON object instead of a table")
	fs.StringVar(&c.out, "out", "", "also write the JSON result to this file")
	fs.StringVar(&c.label, "label", "", "free-form label stored in the result (e.g. entityd, reference)")
	fs.StringVar(&c.token, "token", "", "send Authorization: Bearer <token> on every request (a jwt-mode server; see the jwt command)")
	fs.BoolVar(&c.gzip, "gzip", false, "send Accept-Encoding: gzip (off by default: servers that compress would measure zlib, not streaming)")
}

func (c *commonFlags) base() string { return strings.TrimRight(c.url, "/") }

// newClient returns the one http.Client a benchmark shares between its workers: keep-alive
// connections, at least conns idle connections per host so a closed loop of conns
// clients never dials after warm-up, HTTP/1.1 (what both servers speak on loopback).
func newClient(conns int, gzip bool) *http.Client {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        2*conns + 16,
		MaxIdleConnsPerHost: conns + 16,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  !gzip,
		ForceAttemptHTTP2:   false,
	}
	// Long-poll reads wait up to the server's timeout (20 s for entityd by default).
	return &http.Client{Transport: tr, Timeout: 2 * time.Minute}
}

// runID names the objects one run creates so repeated runs against one server never collide.
func runID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("150405") + "-" + hex.EncodeToString(b[:])
}

// signalContext is cancelled by SIGINT/SIGTERM, so an interrupted benchmark still ends.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// do sends a request and reads the whole body. It reports the status and the body.
func do(ctx context.Context, c *http.Client, method, url string, hdr map[string]string, body []byte) (int, http.Header, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

// errorLog keeps the first few failures for the report (closedLoop counts them).
type errorLog struct {
	mu      sync.Mutex
	samples []string
}

const maxErrorSamples = 5

func (e *errorLog) add(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.samples) < maxErrorSamples {
		s := fmt.Sprintf(format, args...)
		if len(s) > 400 {
			s = s[:400] + "…"
		}
		e.samples = append(e.samples, s)
	}
}

// Latency is a latency distribution in milliseconds.
type Latency struct {
	N      int     `json:"n"`
	MeanMs float64 `json:"mean_ms"`
	P50Ms  float64 `json:"p50_ms"`
	P90Ms  float64 `json:"p90_ms"`
	P99Ms  float64 `json:"p99_ms"`
	P999Ms float64 `json:"p999_ms"`
	MinMs  float64 `json:"min_ms"`
	MaxMs  float64 `json:"max_ms"`
}

// summarize sorts samples (in place) and computes nearest-rank percentiles.
func summarize(samples []time.Duration) Latency {
	if len(samples) == 0 {
		return Latency{}
	}
	slices.Sort(samples)
	var sum time.Duration
	for _, d := range samples {
		sum += d
	}
	q := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(samples)))) - 1
		i = max(0, min(i, len(samples)-1))
		return ms(samples[i])
	}
	return Latency{
		N:      len(samples),
		MeanMs: ms(sum / time.Duration(len(samples))),
		P50Ms:  q(0.50), P90Ms: q(0.90), P99Ms: q(0.99), P999Ms: q(0.999),
		MinMs: ms(samples[0]), MaxMs: ms(samples[len(samples)-1]),
	}
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// fmtMs formats milliseconds for tables: 3 significant digits, at least 0.01 ms.
func fmtMs(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0fms", v)
	case v >= 10:
		return fmt.Sprintf("%.1fms", v)
	default:
		return fmt.Sprintf("%.2fms", v)
	}
}

// emit prints result as JSON or as the table, and writes the JSON to c.out if set.
func emit(c *commonFlags, result any, table func(w io.Writer)) error {
	b, err := json.MarshalIndent(result, "", "  ")
	if err != nil {
		return err
	}
	if c.out != "" {
		if err := os.WriteFile(c.out, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if c.jsonOut {
		_, err = os.Stdout.Write(append(b, '\n'))
		return err
	}
	table(os.Stdout)
	return nil
}

// closedLoop runs conc workers, each calling op in a loop: warm-up first (not recorded),
// then a measurement window of length dur. An operation is recorded when it started inside
// the window; at the end of the window workers stop starting operations and the ones in
// flight finish (and count), so the rate is recorded ops ÷ (window start → last
// completion) and no slow tail is dropped.
type loopResult struct {
	Ops     int
	Elapsed time.Duration
	Lat     []time.Duration
	Errors  int
}

// op returns ok=false for a failed operation (it logs the failure itself).
type opFunc func(ctx context.Context, worker int, iter int) bool

func closedLoop(ctx context.Context, conc int, warmup, dur time.Duration, op opFunc) loopResult {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		all      []time.Duration
		errs     int
		start    = time.Now()
		winStart = start.Add(warmup)
		winEnd   = winStart.Add(dur)
		lastDone time.Time
	)
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 4096)
			nerr := 0
			var last time.Time
			for i := 0; ; i++ {
				if ctx.Err() != nil {
					break
				}
				t0 := time.Now()
				if !t0.Before(winEnd) {
					break
				}
				ok := op(ctx, w, i)
				t1 := time.Now()
				if t0.Before(winStart) {
					continue
				}
				last = t1
				if ok {
					lat = append(lat, t1.Sub(t0))
				} else {
					nerr++
				}
			}
			mu.Lock()
			all = append(all, lat...)
			errs += nerr
			if last.After(lastDone) {
				lastDone = last
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := lastDone.Sub(winStart)
	if elapsed <= 0 {
		elapsed = dur
	}
	return loopResult{Ops: len(all) + errs, Elapsed: elapsed, Lat: all, Errors: errs}
}
