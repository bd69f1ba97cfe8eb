package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The slowread benchmark: what slow or greedy clients cost the server's memory, and
// whether it keeps answering meanwhile. Two phases, each while the server's VmRSS is
// sampled (every 50 ms) and GET /_electric/health is timed (every 100 ms):
//
//   - readers: one message of -size bytes is appended to a stream, then -readers
//     connections GET it from the start and read -read-rate bytes a second (0: only the
//     response head). Their receive buffers are 4 KiB, so what they do not read stays in
//     the server. A reader answered 503 comes back after Retry-After, as a client would.
//   - appends: -appenders concurrent POSTs of -size bytes each (-rounds per appender),
//     each to a stream of its own.
//
// It needs the server's pid (-server-pid) and /proc: run it on the server's machine.

// SlowReadResult is the JSON result of the slowread benchmark.
type SlowReadResult struct {
	Bench        string          `json:"bench"`
	Label        string          `json:"label,omitempty"`
	URL          string          `json:"url"`
	MessageBytes int             `json:"message_bytes"`
	Readers      *SlowReadPhase  `json:"readers,omitempty"`
	Appends      *SlowWritePhase `json:"appends,omitempty"`
	Started      string          `json:"started"`
}

// SlowReadPhase is the readers phase.
type SlowReadPhase struct {
	Readers    int     `json:"readers"`
	ReadRate   int     `json:"read_rate_bytes_per_s"`
	Principals string  `json:"principals"` // each (a principal per reader) or one
	DurationS  float64 `json:"duration_s"`
	Mem        memPeak `json:"mem"`
	// Status counts the answers the readers got (a reader answered 503 tries again);
	// "none" is a request still waiting for its response head at the end.
	Status        map[string]int `json:"status"`
	Holding       int            `json:"holding_200_at_end"` // readers in a 200 response at the end
	BytesReceived int64          `json:"bytes_received"`
	Health        Latency        `json:"health"`
	HealthMaxAt   float64        `json:"health_max_at_s"` // when the slowest probe started, from the phase's start
	HealthErrors  int            `json:"health_errors"`
}

// SlowWritePhase is the appends phase.
type SlowWritePhase struct {
	Appenders    int            `json:"appenders"`
	Rounds       int            `json:"rounds"`
	DurationS    float64        `json:"duration_s"`
	Mem          memPeak        `json:"mem"`
	Status       map[string]int `json:"status"` // "error": the request failed (connection closed)
	Health       Latency        `json:"health"`
	HealthMaxAt  float64        `json:"health_max_at_s"`
	HealthErrors int            `json:"health_errors"`
}

// memPeak is the server's VmRSS before a phase (idle) and its peak during it.
type memPeak struct {
	IdleRSS      int64 `json:"idle_rss_bytes"`
	PeakRSS      int64 `json:"peak_rss_bytes"`
	AboveIdle    int64 `json:"peak_above_idle_bytes"`
	EndRSS       int64 `json:"end_rss_bytes"`
	Samples      int   `json:"samples"`
	SampleMillis int   `json:"sample_every_ms"`
}

func runSlowRead(args []string) error {
	fs := flag.NewFlagSet("slowread", flag.ExitOnError)
	var c commonFlags
	c.register(fs, "http://127.0.0.1:4437")
	pid := fs.Int("server-pid", 0, "the server's pid: its VmRSS is read from /proc (required)")
	size := fs.Int("size", 8<<20, "bytes of the message read, and of each append")
	readers := fs.Int("readers", 150, "slow readers (0: skip the phase)")
	rate := fs.Int("read-rate", 1024, "bytes a second each reader reads (0: only the response head)")
	principals := fs.String("principals", "each", "each (a principal per reader and appender) or one")
	dur := fs.Duration("d", 30*time.Second, "how long the readers phase lasts")
	appenders := fs.Int("appenders", 96, "concurrent appenders (0: skip the phase)")
	rounds := fs.Int("rounds", 3, "appends per appender")
	prefix := fs.String("path-prefix", "/public", "where the streams go: a prefix the server makes public (ENTITYD_PUBLIC_STREAM_PREFIXES), "+
		"so that readers and appenders of other principals may use them where streams have owners")
	_ = fs.Parse(args)
	if *pid == 0 {
		return fmt.Errorf("-server-pid is required")
	}
	if *principals != "each" && *principals != "one" {
		return fmt.Errorf("-principals must be each or one")
	}
	ctx, cancel := signalContext()
	defer cancel()
	res := SlowReadResult{Bench: "slowread", Label: c.label, URL: c.base(), MessageBytes: *size,
		Started: time.Now().UTC().Format(time.RFC3339)}
	who := func(i int) string {
		if *principals == "one" {
			return "user:bench"
		}
		return "user:bench-" + strconv.Itoa(i)
	}
	payload := bytes.Repeat([]byte("x"), *size) // shared by every request: the tool's own memory stays flat
	client := newClient(*appenders+4, false)
	id := runID()
	if *readers > 0 {
		p, err := slowReaders(ctx, &c, client, *pid, *prefix+"/bench-slowread-"+id, payload, *readers, *rate, *dur, who)
		if err != nil {
			return err
		}
		p.Principals = *principals
		res.Readers = p
	}
	if *appenders > 0 {
		p, err := slowAppends(ctx, &c, client, *pid, *prefix+"/bench-slowappend-"+id, payload, *appenders, *rounds, who)
		if err != nil {
			return err
		}
		res.Appends = p
	}
	return emit(&c, res, func(w io.Writer) {
		mb := func(n int64) string { return fmt.Sprintf("%.0f MB", float64(n)/1e6) }
		if p := res.Readers; p != nil {
			fmt.Fprintf(w, "readers: %d × %d B at %d B/s (%s principals), %.0fs\n", p.Readers, *size, p.ReadRate, p.Principals, p.DurationS)
			fmt.Fprintf(w, "  RSS idle %s, peak %s (+%s), end %s\n", mb(p.Mem.IdleRSS), mb(p.Mem.PeakRSS), mb(p.Mem.AboveIdle), mb(p.Mem.EndRSS))
			fmt.Fprintf(w, "  answers %v, holding a 200 at the end: %d\n", p.Status, p.Holding)
			fmt.Fprintf(w, "  health p50 %s p99 %s max %s at %.1fs (%d errors)\n", fmtMs(p.Health.P50Ms), fmtMs(p.Health.P99Ms), fmtMs(p.Health.MaxMs), p.HealthMaxAt, p.HealthErrors)
		}
		if p := res.Appends; p != nil {
			fmt.Fprintf(w, "appends: %d × %d rounds × %d B, %.1fs\n", p.Appenders, p.Rounds, *size, p.DurationS)
			fmt.Fprintf(w, "  RSS idle %s, peak %s (+%s), end %s\n", mb(p.Mem.IdleRSS), mb(p.Mem.PeakRSS), mb(p.Mem.AboveIdle), mb(p.Mem.EndRSS))
			fmt.Fprintf(w, "  answers %v\n", p.Status)
			fmt.Fprintf(w, "  health p50 %s p99 %s max %s at %.1fs (%d errors)\n", fmtMs(p.Health.P50Ms), fmtMs(p.Health.P99Ms), fmtMs(p.Health.MaxMs), p.HealthMaxAt, p.HealthErrors)
		}
	})
}

// watch samples the server's VmRSS and times /_electric/health until stop is called.
type watch struct {
	mem    memPeak
	health []time.Duration
	maxAt  float64 // seconds from the start to the slowest probe
	errs   int
	stop   func()
}

func startWatch(ctx context.Context, base string, pid int) *watch {
	w := &watch{mem: memPeak{SampleMillis: 50}}
	start := time.Now()
	var slowest time.Duration
	w.mem.IdleRSS = slashVmRSS(strconv.Itoa(pid))
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if rss := slashVmRSS(strconv.Itoa(pid)); rss > w.mem.PeakRSS {
				w.mem.PeakRSS = rss
			}
			w.mem.Samples++
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	wg.Go(func() {
		hc := newClient(1, false) // a connection of its own, as a load balancer's probe
		hc.Timeout = 10 * time.Second
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			t0 := time.Now()
			status, _, _, err := do(ctx, hc, http.MethodGet, base+"/_electric/health", nil, nil)
			if ctx.Err() != nil {
				return
			}
			if err != nil || status != http.StatusOK {
				w.errs++
			} else {
				d := time.Since(t0)
				w.health = append(w.health, d)
				if d > slowest {
					slowest, w.maxAt = d, t0.Sub(start).Seconds()
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	w.stop = func() {
		cancel()
		wg.Wait()
		w.mem.EndRSS = slashVmRSS(strconv.Itoa(pid))
		w.mem.AboveIdle = w.mem.PeakRSS - w.mem.IdleRSS
	}
	return w
}

func slowReaders(ctx context.Context, c *commonFlags, client *http.Client, pid int, path string, payload []byte,
	n, rate int, dur time.Duration, who func(int) string) (*SlowReadPhase, error) {
	if err := createStream(ctx, client, c.base()+path, "application/octet-stream"); err != nil {
		return nil, err
	}
	status, _, body, err := do(ctx, client, http.MethodPost, c.base()+path, map[string]string{"Content-Type": "application/octet-stream"}, payload)
	if err != nil || status/100 != 2 {
		return nil, fmt.Errorf("append the message: %d %s %v", status, body, err)
	}
	client.CloseIdleConnections()
	time.Sleep(2 * time.Second) // let the append's garbage go before the idle sample
	u, err := url.Parse(c.base())
	if err != nil {
		return nil, err
	}
	p := &SlowReadPhase{Readers: n, ReadRate: rate, DurationS: dur.Seconds(), Status: map[string]int{}}
	w := startWatch(ctx, c.base(), pid)
	runCtx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	var (
		mu       sync.Mutex
		holding  atomic.Int64
		received atomic.Int64
		wg       sync.WaitGroup
	)
	count := func(k string) { mu.Lock(); p.Status[k]++; mu.Unlock() }
	for i := range n {
		wg.Go(func() {
			for runCtx.Err() == nil {
				answer := slowRead(runCtx, u.Host, path, who(i), rate, &holding, &received)
				count(answer)
				if answer == "200" || answer == "none" {
					return
				}
				select { // Retry-After: 1
				case <-runCtx.Done():
				case <-time.After(time.Second):
				}
			}
		})
	}
	// Readers stop as the phase ends: count the ones in a 200 just before (every 100 ms).
	tick := time.NewTicker(100 * time.Millisecond)
	for runCtx.Err() == nil {
		n := int(holding.Load())
		select {
		case <-runCtx.Done():
		case <-tick.C:
			p.Holding = n
		}
	}
	tick.Stop()
	wg.Wait()
	w.stop()
	p.Mem, p.Health, p.HealthMaxAt, p.HealthErrors = w.mem, summarize(w.health), w.maxAt, w.errs
	p.BytesReceived = received.Load()
	deleteStream(ctx, client, c.base()+path)
	return p, nil
}

// slowRead is one reader's request: it returns the response's status, "none" when no
// head arrived, or "error". A 200 is read at rate bytes a second (or not at all) until
// ctx ends, counting in holding meanwhile.
func slowRead(ctx context.Context, host, path, principal string, rate int, holding, received *atomic.Int64) string {
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return "error"
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	req := "GET " + path + "?offset=-1 HTTP/1.1\r\nHost: " + host + "\r\nElectric-Principal: " + principal + "\r\n\r\n"
	if _, err := conn.Write([]byte(req)); err != nil {
		return "error"
	}
	br := bufio.NewReaderSize(conn, 1024)
	line, err := br.ReadString('\n')
	if err != nil {
		if ctx.Err() != nil {
			return "none"
		}
		return "error"
	}
	f := strings.Fields(line)
	if len(f) < 2 {
		return "error"
	}
	if f[1] != "200" {
		return f[1]
	}
	holding.Add(1)
	defer holding.Add(-1)
	if rate <= 0 {
		<-ctx.Done()
		return "200"
	}
	buf := make([]byte, rate)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		k, err := io.ReadFull(br, buf)
		received.Add(int64(k))
		if err != nil {
			return "200" // the end of the body, the server's deadline, or ours
		}
		select {
		case <-ctx.Done():
			return "200"
		case <-tick.C:
		}
	}
}

func slowAppends(ctx context.Context, c *commonFlags, client *http.Client, pid int, path string, payload []byte,
	n, rounds int, who func(int) string) (*SlowWritePhase, error) {
	paths := make([]string, n)
	for i := range paths {
		paths[i] = c.base() + path + "-" + strconv.Itoa(i)
		if err := createStream(ctx, client, paths[i], "application/octet-stream"); err != nil {
			return nil, err
		}
	}
	time.Sleep(2 * time.Second)
	p := &SlowWritePhase{Appenders: n, Rounds: rounds, Status: map[string]int{}}
	w := startWatch(ctx, c.base(), pid)
	t0 := time.Now()
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for i := range n {
		wg.Go(func() {
			for range rounds {
				status, _, _, err := do(ctx, client, http.MethodPost, paths[i],
					map[string]string{"Content-Type": "application/octet-stream", "Electric-Principal": who(i)}, payload)
				k := strconv.Itoa(status)
				if err != nil {
					k = "error"
				}
				mu.Lock()
				p.Status[k]++
				mu.Unlock()
				if status == http.StatusServiceUnavailable {
					time.Sleep(time.Second) // Retry-After: 1, then the next round
				}
			}
		})
	}
	wg.Wait()
	p.DurationS = time.Since(t0).Seconds()
	time.Sleep(time.Second) // what the last appends left behind
	w.stop()
	p.Mem, p.Health, p.HealthMaxAt, p.HealthErrors = w.mem, summarize(w.health), w.maxAt, w.errs
	for _, path := range paths {
		deleteStream(ctx, client, path)
	}
	return p, nil
}
