package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// SendResult is the JSON result of the send benchmark.
type SendResult struct {
	Bench        string   `json:"bench"`
	Label        string   `json:"label,omitempty"`
	URL          string   `json:"url"`
	Entities     int      `json:"entities"`
	Concurrency  int      `json:"concurrency"`
	DurationS    float64  `json:"duration_s"`
	WarmupS      float64  `json:"warmup_s"`
	BodyBytes    int      `json:"body_bytes"`
	PayloadBytes int      `json:"payload_bytes"`
	Sends        int      `json:"sends"`
	SendsPerSec  float64  `json:"sends_per_sec"`
	Latency      Latency  `json:"latency"`
	Errors       int      `json:"errors"`
	ErrorSamples []string `json:"error_samples,omitempty"`
	Started      string   `json:"started"`
}

func runSend(args []string) error {
	fs := flag.NewFlagSet("send", flag.ExitOnError)
	var c commonFlags
	c.register(fs, "http://127.0.0.1:4437")
	entities := fs.Int("entities", 100, "entities to spawn and send to (each send picks one at random)")
	conc := fs.Int("c", 16, "concurrent clients (closed loop: each waits for its response before sending again)")
	dur := fs.Duration("d", 10*time.Second, "measurement duration")
	warmup := fs.Duration("warmup", 2*time.Second, "warm-up before measuring (not recorded)")
	payloadBytes := fs.Int("payload-bytes", 300, "minimum size of the composer_input payload JSON")
	typeName := fs.String("type", "bench", "entity type to register and spawn")
	_ = fs.Parse(args)
	if *conc < 1 || *entities < 1 {
		return fmt.Errorf("-c and -entities must be at least 1")
	}
	ctx, stop := signalContext()
	defer stop()
	client := withToken(newClient(*conc, c.gzip), c.token)
	base := c.base()
	started := time.Now().UTC()

	// Register the type (an upsert) and spawn the entities.
	status, _, body, err := do(ctx, client, http.MethodPost, base+"/_electric/entity-types",
		map[string]string{"Content-Type": "application/json"},
		[]byte(`{"name":"`+*typeName+`","description":"entityd-bench load target: receives composer_input sends"}`))
	if err != nil {
		return fmt.Errorf("register type: %w", err)
	}
	if status/100 != 2 {
		return fmt.Errorf("register type: %d %s", status, body)
	}
	run := runID()
	ids := make([]string, *entities)
	for i := range ids {
		ids[i] = fmt.Sprintf("s-%s-%d", run, i)
	}
	if err := parallel(ctx, 16, len(ids), func(i int) error {
		status, _, body, err := do(ctx, client, http.MethodPut, base+"/_electric/entities/"+*typeName+"/"+ids[i],
			map[string]string{"Content-Type": "application/json"}, []byte(`{}`))
		if err != nil {
			return err
		}
		if status != http.StatusCreated {
			return fmt.Errorf("spawn %s: %d %s", ids[i], status, body)
		}
		return nil
	}); err != nil {
		return err
	}
	urls := make([]string, len(ids))
	for i, id := range ids {
		urls[i] = base + "/_electric/entities/" + *typeName + "/" + id + "/send"
	}

	// 900 bodies (PR numbers 100..999, same length) so sends are not byte-identical.
	bodies := make([][]byte, 900)
	for i := range bodies {
		bodies[i] = sendBody(composerInput(100+i, *payloadBytes))
	}
	var errs errorLog
	var seq atomic.Uint64
	rngs := make([]*rand.Rand, *conc)
	for i := range rngs {
		rngs[i] = rand.New(rand.NewPCG(uint64(i)+1, uint64(time.Now().UnixNano())))
	}
	hdr := http.Header{"Content-Type": {"application/json"}}
	res := closedLoop(ctx, *conc, *warmup, *dur, func(ctx context.Context, w, _ int) bool {
		rng := rngs[w]
		url := urls[rng.IntN(len(urls))]
		b := bodies[seq.Add(1)%uint64(len(bodies))]
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
		if err != nil {
			errs.add("%v", err)
			return false
		}
		req.Header = hdr.Clone()
		req.ContentLength = int64(len(b))
		resp, err := client.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				errs.add("POST %s: %v", url, err)
			}
			return false
		}
		if resp.StatusCode != http.StatusOK {
			rb, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			errs.add("POST %s: %d %s", url, resp.StatusCode, rb)
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return true
	})
	ok := res.Ops - res.Errors
	out := SendResult{
		Bench: "send", Label: c.label, URL: base, Entities: *entities, Concurrency: *conc,
		DurationS: dur.Seconds(), WarmupS: warmup.Seconds(),
		BodyBytes: len(bodies[0]), PayloadBytes: len(composerInput(100, *payloadBytes)),
		Sends: ok, SendsPerSec: float64(ok) / res.Elapsed.Seconds(),
		Latency: summarize(res.Lat), Errors: res.Errors, ErrorSamples: errs.samples,
		Started: started.Format(time.RFC3339),
	}
	return emit(&c, out, func(w io.Writer) {
		fmt.Fprintf(w, "send %s  entities=%d  c=%d  d=%s (+%s warm-up)  body=%d B\n",
			base, out.Entities, out.Concurrency, dur, warmup, out.BodyBytes)
		latencyTable(w, "sends", out.Sends, out.SendsPerSec, out.Latency, out.Errors)
		printSamples(w, out.ErrorSamples)
	})
}

func latencyTable(w io.Writer, what string, n int, rate float64, l Latency, errors int) {
	fmt.Fprintf(w, "%10s %10s %9s %9s %9s %9s %9s %9s %7s\n", what, what+"/s", "mean", "p50", "p90", "p99", "p99.9", "max", "errors")
	fmt.Fprintf(w, "%10d %10.0f %9s %9s %9s %9s %9s %9s %7d\n", n, rate,
		fmtMs(l.MeanMs), fmtMs(l.P50Ms), fmtMs(l.P90Ms), fmtMs(l.P99Ms), fmtMs(l.P999Ms), fmtMs(l.MaxMs), errors)
}

func printSamples(w io.Writer, samples []string) {
	for _, s := range samples {
		fmt.Fprintf(w, "  error: %s\n", s)
	}
}

// parallel runs f(0..n-1) on up to k goroutines and returns the first error.
func parallel(ctx context.Context, k, n int, f func(i int) error) error {
	var (
		wg    sync.WaitGroup
		next  atomic.Int64
		mu    sync.Mutex
		first error
	)
	for range min(k, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}
