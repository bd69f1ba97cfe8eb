package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The commands benchmark: GET /_electric/entities/<type>/<id>/slash-commands of an entity
// with many static commands, closed loop, revalidating with If-None-Match (every answer
// should be 304 while nothing changes) or, with -no-etag, fetching the full list.

// CommandsResult is the JSON result of the commands benchmark.
type CommandsResult struct {
	Bench         string `json:"bench"`
	Label         string `json:"label,omitempty"`
	URL           string `json:"url"`
	Type          string `json:"type"`
	Entity        string `json:"entity"`
	Commands      int    `json:"commands"`
	WithArguments int    `json:"commands_with_arguments"`
	ListBytes     int    `json:"list_bytes"` // the 200 response's body
	ETag          string `json:"etag"`
	// Revalidate is true when every request carried If-None-Match (the default).
	Revalidate     bool     `json:"revalidate"`
	Concurrency    int      `json:"concurrency"`
	DurationS      float64  `json:"duration_s"`
	WarmupS        float64  `json:"warmup_s"`
	Requests       int      `json:"requests"`
	RequestsPerSec float64  `json:"requests_per_sec"`
	NotModified    int      `json:"not_modified"` // 304s among the recorded requests
	OK             int      `json:"ok"`           // 200s among the recorded requests
	Share304       float64  `json:"share_304"`
	Latency        Latency  `json:"latency"`
	Errors         int      `json:"errors"`
	ErrorSamples   []string `json:"error_samples,omitempty"`
	// CPU over warm-up and window together, and per request (all requests, warm-up
	// included), in µs.
	CPU           *SlashCPU `json:"cpu,omitempty"`
	AllRequests   int64     `json:"all_requests"`
	ServerUsPerRq float64   `json:"server_us_per_request"`
	PGUsPerRq     float64   `json:"postgres_us_per_request"`
	BenchUsPerRq  float64   `json:"bench_us_per_request"`
	Started       string    `json:"started"`
}

// slashStaticCommands returns n valid static definitions: lowercase kebab-case names, every
// third one with one to three arguments of the three types.
func slashStaticCommands(n int) (json.RawMessage, int) {
	type arg struct {
		Name        string `json:"name"`
		Type        string `json:"type"`
		Required    bool   `json:"required,omitempty"`
		Description string `json:"description,omitempty"`
	}
	type def struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Arguments   []arg  `json:"arguments,omitempty"`
	}
	types := []string{"string", "number", "boolean"}
	defs := make([]def, n)
	withArgs := 0
	for i := range defs {
		d := def{Name: fmt.Sprintf("cmd-%03d", i), Description: fmt.Sprintf("Benchmark command %d: does something useful to the notebook", i)}
		if i%3 == 0 {
			withArgs++
			for j := 0; j <= (i/3)%3; j++ {
				d.Arguments = append(d.Arguments, arg{Name: fmt.Sprintf("arg_%d", j), Type: types[(i+j)%3], Required: j == 0,
					Description: "argument " + fmt.Sprint(j)})
			}
		}
		defs[i] = d
	}
	b, _ := json.Marshal(defs)
	return b, withArgs
}

func runCommands(args []string) error {
	fs := flag.NewFlagSet("commands", flag.ExitOnError)
	var c commonFlags
	c.register(fs, "http://127.0.0.1:4437")
	n := fs.Int("commands", 200, "static commands of the entity type (at most 500)")
	conc := fs.Int("c", 64, "concurrent clients (closed loop)")
	dur := fs.Duration("d", 10*time.Second, "measurement duration")
	warmup := fs.Duration("warmup", 2*time.Second, "warm-up before measuring (not recorded)")
	noETag := fs.Bool("no-etag", false, "send no If-None-Match: every answer is the full 200 list")
	typeName := fs.String("type", "bench-commands", "entity type to register and spawn")
	serverPID := fs.Int("server-pid", 0, "the server's pid, for the CPU split (0: counted as other)")
	pgPID := fs.Int("pg-pid", 0, "the PostgreSQL postmaster's pid, for the CPU split (0: counted as other)")
	debugURL := fs.String("debug-url", "", "the server's pprof address (--debug-addr), e.g. http://127.0.0.1:6060, for -pprof-out")
	pprofOut := fs.String("pprof-out", "", "with -debug-url: save a CPU profile of the measurement window as <prefix>-cpu.pb.gz")
	_ = fs.Parse(args)
	if *conc < 1 || *n < 1 || *n > 500 {
		return fmt.Errorf("-c must be at least 1 and -commands 1..500")
	}
	ctx, stop := signalContext()
	defer stop()
	client := newClient(*conc, c.gzip)
	base := c.base()
	started := time.Now().UTC()

	defs, withArgs := slashStaticCommands(*n)
	typeBody, _ := json.Marshal(map[string]any{"name": *typeName,
		"description": "entityd-bench commands target: an entity with many static slash commands", "slash_commands": defs})
	status, _, body, err := do(ctx, client, http.MethodPost, base+"/_electric/entity-types",
		map[string]string{"Content-Type": "application/json"}, typeBody)
	if err != nil || status/100 != 2 {
		return fmt.Errorf("register type: %d %.400s %v", status, body, err)
	}
	id := "c-" + runID()
	status, _, body, err = do(ctx, client, http.MethodPut, base+"/_electric/entities/"+*typeName+"/"+id,
		map[string]string{"Content-Type": "application/json"}, []byte(`{}`))
	if err != nil || status != http.StatusCreated {
		return fmt.Errorf("spawn: %d %s %v", status, body, err)
	}
	listURL := base + "/_electric/entities/" + *typeName + "/" + id + "/slash-commands"
	status, h, body, err := do(ctx, client, http.MethodGet, listURL, nil, nil)
	if err != nil || status != http.StatusOK {
		return fmt.Errorf("GET %s: %d %.400s %v", listURL, status, body, err)
	}
	var rows []json.RawMessage
	if err := json.Unmarshal(body, &rows); err != nil || len(rows) != *n {
		return fmt.Errorf("GET %s: want %d commands, got %d (%v)", listURL, *n, len(rows), err)
	}
	listLen := len(body)
	tag := h.Get("ETag")
	if tag == "" && !*noETag {
		return fmt.Errorf("GET %s: no ETag", listURL)
	}
	// Revalidation must work before it is measured.
	if !*noETag {
		status, _, body, err = do(ctx, client, http.MethodGet, listURL, map[string]string{"If-None-Match": tag}, nil)
		if err != nil || status != http.StatusNotModified {
			return fmt.Errorf("GET %s with If-None-Match %s: %d %.200s %v (want 304)", listURL, tag, status, body, err)
		}
	}

	var (
		errs    errorLog
		n304    atomic.Int64
		n200    atomic.Int64
		allReqs atomic.Int64
	)
	hdr := http.Header{}
	if !*noETag {
		hdr.Set("If-None-Match", tag)
	}
	cpu0 := slashReadCPU(*serverPID, *pgPID)
	// Statuses are counted for requests started in the window, as closedLoop records them
	// (its window starts a few µs after this one).
	winStart := time.Now().Add(*warmup)
	var profWG sync.WaitGroup
	if *pprofOut != "" && *debugURL != "" {
		profWG.Add(1)
		go func() {
			defer profWG.Done()
			select {
			case <-time.After(*warmup):
			case <-ctx.Done():
				return
			}
			slashSaveURL(ctx, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimRight(*debugURL, "/"), max(1, int(dur.Seconds()))), *pprofOut+"-cpu.pb.gz")
		}()
	}
	res := closedLoop(ctx, *conc, *warmup, *dur, func(ctx context.Context, _, _ int) bool {
		allReqs.Add(1)
		rec := !time.Now().Before(winStart)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, listURL, nil)
		if err != nil {
			errs.add("%v", err)
			return false
		}
		req.Header = hdr.Clone()
		resp, err := client.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				errs.add("GET: %v", err)
			}
			return false
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusNotModified && !*noETag:
			if rec {
				n304.Add(1)
			}
			return true
		case resp.StatusCode == http.StatusOK && int(n) == listLen:
			if rec {
				n200.Add(1)
			}
			return true
		default:
			errs.add("GET: %d (%d bytes)", resp.StatusCode, n)
			return false
		}
	})
	cpu1 := slashReadCPU(*serverPID, *pgPID)
	profWG.Wait()
	ok := res.Ops - res.Errors
	out := CommandsResult{
		Bench: "commands", Label: c.label, URL: base, Type: *typeName, Entity: id,
		Commands: *n, WithArguments: withArgs, ListBytes: listLen, ETag: tag, Revalidate: !*noETag,
		Concurrency: *conc, DurationS: dur.Seconds(), WarmupS: warmup.Seconds(),
		Requests: ok, RequestsPerSec: float64(ok) / res.Elapsed.Seconds(),
		NotModified: int(n304.Load()), OK: int(n200.Load()),
		Latency: summarize(res.Lat), Errors: res.Errors, ErrorSamples: errs.samples,
		CPU: cpu0.split(cpu1), AllRequests: allReqs.Load(), Started: started.Format(time.RFC3339),
	}
	if s := out.NotModified + out.OK; s > 0 {
		out.Share304 = float64(out.NotModified) / float64(s)
	}
	if out.AllRequests > 0 {
		per := func(cpuS float64) float64 { return cpuS * 1e6 / float64(out.AllRequests) }
		out.ServerUsPerRq, out.PGUsPerRq, out.BenchUsPerRq = per(out.CPU.ServerS), per(out.CPU.PostgresS), per(out.CPU.BenchS)
	}
	return emit(&c, out, func(w io.Writer) {
		mode := "If-None-Match " + tag
		if *noETag {
			mode = "no If-None-Match (full list)"
		}
		fmt.Fprintf(w, "commands %s  %d commands (%d with arguments, list %d B)  c=%d  d=%s (+%s warm-up)  %s\n",
			strings.TrimPrefix(listURL, base), out.Commands, out.WithArguments, out.ListBytes, out.Concurrency, dur, warmup, mode)
		latencyTable(w, "requests", out.Requests, out.RequestsPerSec, out.Latency, out.Errors)
		fmt.Fprintf(w, "304: %d, 200: %d (share of 304s %.2f%%)\n", out.NotModified, out.OK, 100*out.Share304)
		fmt.Fprintf(w, "cpu %s\n", out.CPU)
		fmt.Fprintf(w, "cpu per request (µs, %d requests incl. warm-up): server %.0f, postgres %.0f, bench %.0f\n",
			out.AllRequests, out.ServerUsPerRq, out.PGUsPerRq, out.BenchUsPerRq)
		printSamples(w, out.ErrorSamples)
	})
}
