package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The fanout benchmark: N Server-Sent-Events subscribers follow one entity's
// slash-command collection (/<type>/<id>/slash-commands?offset=-1&live=sse); the tool
// measures the server's memory per idle subscriber, then registers R dynamic commands
// one after another and measures, for every (subscriber, registration) pair, the time
// from just before the PUT to the moment the subscriber has the event.
//
// The client is a raw HTTP/1.1 client (one goroutine and ~1.5 KB of buffers per
// connection, no net/http transport goroutines), because on a small machine its CPU
// competes with the server's.

// FanoutResult is the JSON result of the fanout benchmark.
type FanoutResult struct {
	Bench          string `json:"bench"`
	Label          string `json:"label,omitempty"`
	URL            string `json:"url"`
	Type           string `json:"type"`
	Entity         string `json:"entity"`
	StaticCommands int    `json:"static_commands"`
	Subscribers    int    `json:"subscribers"`
	// Connected subscribers got their snapshot and the up-to-date control event.
	Connected           int        `json:"connected"`
	ConnectErrors       int        `json:"connect_errors"`
	ConnectConcurrency  int        `json:"connect_concurrency"`
	ConnectSeconds      float64    `json:"connect_seconds"`
	ConnectsPerSec      float64    `json:"connects_per_sec"`
	ConnectLatency      Latency    `json:"connect_latency"` // dial → snapshot + up-to-date control
	SnapshotBytes       int        `json:"snapshot_bytes"`  // the snapshot data event's payload
	LocalIPs            []string   `json:"local_ips"`
	EphemeralPortRange  string     `json:"ephemeral_port_range"`
	FDLimit             uint64     `json:"fd_limit"`
	ServerFDLimit       string     `json:"server_fd_limit,omitempty"`
	SettleSeconds       float64    `json:"settle_seconds"`
	MemBefore           *FanoutMem `json:"mem_before"`
	MemIdle             *FanoutMem `json:"mem_idle"`
	MemEnd              *FanoutMem `json:"mem_end"`
	RSSPerSubscriber    float64    `json:"rss_bytes_per_subscriber"`        // server VmRSS delta ÷ connected
	GoPerSubscriber     float64    `json:"go_bytes_per_subscriber"`         // server HeapInuse+StackInuse delta ÷ connected
	HeapPerSubscriber   float64    `json:"heap_bytes_per_subscriber"`       // server HeapInuse delta ÷ connected
	StackPerSubscriber  float64    `json:"stack_bytes_per_subscriber"`      // server StackInuse delta ÷ connected
	KernelPerSubscriber float64    `json:"kernel_tcp_bytes_per_subscriber"` // sockstat TCP mem delta ÷ connected (both ends)
	BenchPerSubscriber  float64    `json:"bench_rss_bytes_per_subscriber"`  // this tool's VmRSS delta ÷ connected
	GoroutinesPerSub    float64    `json:"server_goroutines_per_subscriber"`

	Registrations  int     `json:"registrations"`
	IntervalS      float64 `json:"interval_s"`
	DeliverTimeout float64 `json:"deliver_timeout_s"`
	// Delivery is over every (subscriber, registration) pair that was delivered: from just
	// before the PUT to the subscriber having read the data event.
	Delivery        Latency       `json:"delivery"`
	PerRegistration []RegDelivery `json:"per_registration"`
	// DeliveryQuiet is Delivery over the registrations during whose delivery other
	// processes (not the server, PostgreSQL or this tool) used less than QuietOtherPct of
	// the machine: on a shared machine, the numbers the server is responsible for.
	QuietOtherPct      float64  `json:"quiet_other_pct"`
	QuietRegistrations int      `json:"quiet_registrations"`
	DeliveryQuiet      Latency  `json:"delivery_quiet"`
	Put                Latency  `json:"put"` // the registrations' own PUT round trips
	Missed             int      `json:"missed"`
	Duplicates         int      `json:"duplicates"`
	TxidMismatches     int      `json:"txid_mismatches"`
	Reconnects         int      `json:"reconnects"`
	Errors             int      `json:"errors"`
	ErrorSamples       []string `json:"error_samples,omitempty"`
	// CPU per phase: connect (all subscribers getting their snapshot), idle (the settle
	// wait), registrations (from the first PUT to the last delivery wait).
	CPU     map[string]*SlashCPU `json:"cpu"`
	Started string               `json:"started"`
}

// RegDelivery is the delivery of one registration to every subscriber.
type RegDelivery struct {
	N         int     `json:"n"`
	Name      string  `json:"name"`
	Txid      string  `json:"txid"`
	PutMs     float64 `json:"put_ms"`
	Delivered int     `json:"delivered"`
	Missed    int     `json:"missed"`
	P50Ms     float64 `json:"p50_ms"`
	P90Ms     float64 `json:"p90_ms"`
	P99Ms     float64 `json:"p99_ms"`
	MaxMs     float64 `json:"max_ms"`
	// AllMs is when the last subscriber had it (0 if some never did).
	AllMs float64 `json:"all_ms"`
	// CPU from just before the PUT until just before the next registration's PUT.
	CPU *SlashCPU `json:"cpu,omitempty"`
}

// FanoutMem is the server's (and this tool's) memory at one moment.
type FanoutMem struct {
	ServerRSS  int64 `json:"server_rss_bytes,omitempty"`
	HeapInuse  int64 `json:"server_heap_inuse_bytes,omitempty"`
	HeapAlloc  int64 `json:"server_heap_alloc_bytes,omitempty"`
	StackInuse int64 `json:"server_stack_inuse_bytes,omitempty"`
	GoSys      int64 `json:"server_go_sys_bytes,omitempty"`
	Goroutines int   `json:"server_goroutines,omitempty"`
	TCPInuse   int   `json:"tcp_sockets_inuse"`
	TCPMem     int64 `json:"tcp_mem_bytes"`
	BenchRSS   int64 `json:"bench_rss_bytes"`
}

const fanoutRegPrefix = "fanout-"

type fanout struct {
	addr     string // host:port
	host     string
	path     string // /<type>/<id>/slash-commands
	bufSize  int
	dialer   []*net.Dialer
	base     time.Time
	regs     int
	arrivals [][]atomic.Int64 // [registration][subscriber] ns since base (+1), 0 = not yet
	counts   []atomic.Int64   // [registration] subscribers that have it
	txids    []fanoutTxids    // [registration] txids seen
	dups     atomic.Int64
	reconn   atomic.Int64
	snapLen  atomic.Int64
	errs     errorLog
	nerr     atomic.Int64
	ready    atomic.Int64
}

type fanoutTxids struct {
	mu   sync.Mutex
	seen map[string]int
}

func runFanout(args []string) error {
	fs := flag.NewFlagSet("fanout", flag.ExitOnError)
	var c commonFlags
	c.register(fs, "http://127.0.0.1:4437")
	n := fs.Int("n", 10000, "SSE subscribers to open")
	regs := fs.Int("registrations", 20, "dynamic commands to register, one after another")
	interval := fs.Duration("interval", time.Second, "time between the starts of two registrations")
	deliverTimeout := fs.Duration("deliver-timeout", 10*time.Second, "how long to wait for every subscriber to have a registration before counting the rest as missed")
	static := fs.Int("static", 10, "static commands of the entity type (the snapshot's size)")
	typeName := fs.String("type", "bench-fanout", "entity type to register and spawn")
	connConc := fs.Int("connect-concurrency", 64, "subscribers connecting at once (each until it has its snapshot)")
	settle := fs.Duration("settle", 5*time.Second, "wait after the last subscriber is ready before measuring idle memory")
	serverPID := fs.Int("server-pid", 0, "the server's pid: its VmRSS and CPU are read from /proc (0: not measured)")
	pgPID := fs.Int("pg-pid", 0, "the PostgreSQL postmaster's pid: its and its children's CPU are counted as postgres (0: not measured)")
	debugURL := fs.String("debug-url", "", "the server's pprof address (--debug-addr), e.g. http://127.0.0.1:6060: Go heap and stack are read from it, after a forced GC")
	quietOther := fs.Float64("quiet-other", 10, "a registration counts as quiet when other processes used less than this % of the machine during its interval")
	localIPs := fs.Int("local-ips", 0, "source addresses 127.0.0.1..127.0.0.N to spread the connections over (0: as many as the ephemeral port range needs)")
	pprofOut := fs.String("pprof-out", "", "with -debug-url: save profiles as <prefix>-heap-idle.pb.gz, <prefix>-goroutines-idle.txt and <prefix>-cpu-registrations.pb.gz")
	bufSize := fs.Int("buf", 1024, "read buffer per connection, bytes (lines longer than this are assembled in a scratch buffer)")
	_ = fs.Parse(args)
	if *n < 1 || *regs < 0 || *connConc < 1 || *static < 0 || *static > 400 {
		return fmt.Errorf("-n and -connect-concurrency must be at least 1, -registrations at least 0, -static 0..400")
	}
	ctx, stop := signalContext()
	defer stop()
	started := time.Now().UTC()
	base := c.base()
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return fmt.Errorf("bad -url %q", c.url)
	}
	out := &FanoutResult{Bench: "fanout", Label: c.label, URL: base, Type: *typeName, StaticCommands: *static,
		Subscribers: *n, ConnectConcurrency: *connConc, SettleSeconds: settle.Seconds(),
		Registrations: *regs, IntervalS: interval.Seconds(), DeliverTimeout: deliverTimeout.Seconds(),
		CPU: map[string]*SlashCPU{}, Started: started.Format(time.RFC3339)}

	// File descriptors: one per subscriber, plus slack.
	out.FDLimit, err = slashRaiseFDLimit(uint64(*n) + 256)
	if err != nil {
		return err
	}
	if out.FDLimit < uint64(*n)+64 {
		return fmt.Errorf("file-descriptor limit %d is too low for %d subscribers (raise the hard limit: ulimit -Hn)", out.FDLimit, *n)
	}
	if *serverPID > 0 {
		out.ServerFDLimit = slashServerFDLimit(*serverPID)
	}
	lo, hi := slashEphemeralPorts()
	out.EphemeralPortRange = fmt.Sprintf("%d-%d", lo, hi)
	nips := *localIPs
	if nips <= 0 {
		// Leave half the range for TIME_WAIT sockets of earlier runs and everything else.
		usable := max(1, (hi-lo+1)/2)
		nips = (*n + usable - 1) / usable
	}
	f := &fanout{addr: u.Host, host: u.Host, bufSize: max(64, *bufSize), base: time.Now(), regs: *regs}
	if !strings.Contains(f.addr, ":") {
		f.addr += ":80"
	}
	for i := 1; i <= nips; i++ {
		ip := net.IPv4(127, 0, 0, byte(i))
		d := &net.Dialer{Timeout: 10 * time.Second, Control: slashBindNoPort}
		if nips > 1 {
			d.LocalAddr = &net.TCPAddr{IP: ip}
		}
		f.dialer = append(f.dialer, d)
		out.LocalIPs = append(out.LocalIPs, ip.String())
	}

	// The entity: a type with static commands, one fresh instance.
	client := newClient(16, false)
	defs := make([]string, *static)
	for i := range defs {
		defs[i] = fmt.Sprintf(`{"name":"static-%d","description":"static command %d of the fan-out benchmark"}`, i, i)
	}
	typeBody := `{"name":"` + *typeName + `","description":"entityd-bench fanout target","slash_commands":[` + strings.Join(defs, ",") + `]}`
	status, _, body, err := do(ctx, client, http.MethodPost, base+"/_electric/entity-types",
		map[string]string{"Content-Type": "application/json"}, []byte(typeBody))
	if err != nil || status/100 != 2 {
		return fmt.Errorf("register type: %d %s %v", status, body, err)
	}
	out.Entity = "f-" + runID()
	entityURL := base + "/_electric/entities/" + *typeName + "/" + out.Entity
	status, _, body, err = do(ctx, client, http.MethodPut, entityURL, map[string]string{"Content-Type": "application/json"}, []byte(`{}`))
	if err != nil || status != http.StatusCreated {
		return fmt.Errorf("spawn: %d %s %v", status, body, err)
	}
	f.path = "/" + *typeName + "/" + out.Entity + "/slash-commands"

	out.MemBefore = slashReadMem(ctx, *serverPID, *debugURL)

	// Connect every subscriber; at most connConc are between dialing and their snapshot.
	f.arrivals = make([][]atomic.Int64, *regs)
	for k := range f.arrivals {
		f.arrivals[k] = make([]atomic.Int64, *n)
	}
	f.counts = make([]atomic.Int64, *regs)
	f.txids = make([]fanoutTxids, *regs)
	for k := range f.txids {
		f.txids[k].seen = map[string]int{}
	}
	subCtx, stopSubs := context.WithCancel(ctx)
	defer stopSubs()
	sem := make(chan struct{}, *connConc)
	connLat := make([]time.Duration, *n)
	var wg, connecting sync.WaitGroup
	var connErrs atomic.Int64
	cpu0 := slashReadCPU(*serverPID, *pgPID)
	t0 := time.Now()
	for i := 0; i < *n; i++ {
		wg.Add(1)
		connecting.Add(1)
		go func() {
			defer wg.Done()
			f.subscriber(subCtx, i, sem, &connecting, &connLat[i], &connErrs)
		}()
	}
	connecting.Wait()
	connectDur := time.Since(t0)
	cpu1 := slashReadCPU(*serverPID, *pgPID)
	out.CPU["connect"] = cpu0.split(cpu1)
	out.Connected = int(f.ready.Load())
	out.ConnectErrors = int(connErrs.Load())
	out.ConnectSeconds = connectDur.Seconds()
	out.ConnectsPerSec = float64(out.Connected) / connectDur.Seconds()
	var okLat []time.Duration
	for _, d := range connLat {
		if d > 0 {
			okLat = append(okLat, d)
		}
	}
	out.ConnectLatency = summarize(okLat)
	out.SnapshotBytes = int(f.snapLen.Load())
	fmt.Fprintf(os.Stderr, "fanout: %d/%d subscribers ready in %.1fs (%d connect errors); settling %s\n",
		out.Connected, *n, connectDur.Seconds(), out.ConnectErrors, *settle)
	if ctx.Err() != nil {
		return ctx.Err()
	}

	select {
	case <-time.After(*settle):
	case <-ctx.Done():
		return ctx.Err()
	}
	cpu2 := slashReadCPU(*serverPID, *pgPID)
	out.CPU["idle"] = cpu1.split(cpu2)
	out.MemIdle = slashReadMem(ctx, *serverPID, *debugURL)
	if *pprofOut != "" && *debugURL != "" {
		d := strings.TrimRight(*debugURL, "/")
		slashSaveURL(ctx, d+"/debug/pprof/heap", *pprofOut+"-heap-idle.pb.gz")
		slashSaveURL(ctx, d+"/debug/pprof/goroutine?debug=1", *pprofOut+"-goroutines-idle.txt")
	}
	if conn := float64(out.Connected); conn > 0 {
		b, a := out.MemBefore, out.MemIdle
		if *serverPID > 0 {
			out.RSSPerSubscriber = float64(a.ServerRSS-b.ServerRSS) / conn
		}
		if *debugURL != "" {
			out.GoPerSubscriber = float64(a.HeapInuse+a.StackInuse-b.HeapInuse-b.StackInuse) / conn
			out.HeapPerSubscriber = float64(a.HeapInuse-b.HeapInuse) / conn
			out.StackPerSubscriber = float64(a.StackInuse-b.StackInuse) / conn
			out.GoroutinesPerSub = float64(a.Goroutines-b.Goroutines) / conn
		}
		out.KernelPerSubscriber = float64(a.TCPMem-b.TCPMem) / conn
		out.BenchPerSubscriber = float64(a.BenchRSS-b.BenchRSS) / conn
	}

	// Registrations, spaced by interval; each waits until every connected subscriber has
	// it (or deliverTimeout).
	var profWG sync.WaitGroup
	if *pprofOut != "" && *debugURL != "" && *regs > 0 {
		secs := int(math.Ceil((time.Duration(*regs) * *interval).Seconds()))
		profWG.Add(1)
		go func() {
			defer profWG.Done()
			slashSaveURL(ctx, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimRight(*debugURL, "/"), secs), *pprofOut+"-cpu-registrations.pb.gz")
		}()
		time.Sleep(50 * time.Millisecond) // let the profile start
	}
	cpu3 := slashReadCPU(*serverPID, *pgPID)
	target := int64(out.Connected)
	var puts []time.Duration
	starts := make([]time.Duration, *regs)
	txids := make([]string, *regs)
	regCPU := make([]*SlashCPU, *regs)
	next := time.Now()
	// Each registration's CPU split covers its whole interval (from just before its PUT
	// to just before the next one): /proc/stat and the processes' own counters tick
	// differently, so windows much shorter than a second are noise.
	var prev slashTicks
	for k := 0; k < *regs && ctx.Err() == nil; k++ {
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		c0 := slashReadCPU(*serverPID, *pgPID)
		if k > 0 {
			regCPU[k-1] = prev.split(c0)
		}
		prev = c0
		next = time.Now().Add(*interval)
		name := fmt.Sprintf("%s%d", fanoutRegPrefix, k)
		put := fmt.Sprintf(`{"description":"fan-out registration %d of %s","arguments":[{"name":"query","type":"string","required":true}],"version":"%d"}`, k, out.Entity, k)
		starts[k] = time.Since(f.base)
		tp := time.Now()
		status, _, body, err := do(ctx, client, http.MethodPut, entityURL+"/slash-commands/"+name+"?owner=bench",
			map[string]string{"Content-Type": "application/json"}, []byte(put))
		puts = append(puts, time.Since(tp))
		if err != nil || status != http.StatusOK {
			f.fail("PUT %s: %d %s %v", name, status, body, err)
			continue
		}
		txids[k] = slashField(body, "txid")
		deadline := time.Now().Add(*deliverTimeout)
		for f.counts[k].Load() < target && time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
	}
	if *regs > 0 && ctx.Err() == nil {
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		regCPU[*regs-1] = prev.split(slashReadCPU(*serverPID, *pgPID))
	}
	cpu4 := slashReadCPU(*serverPID, *pgPID)
	out.CPU["registrations"] = cpu3.split(cpu4)
	profWG.Wait()
	out.MemEnd = slashReadMem(ctx, *serverPID, *debugURL)
	out.Put = summarize(puts)

	// Collect every (subscriber, registration) pair of the subscribers that were ready.
	var all, quiet []time.Duration
	out.QuietOtherPct = *quietOther
	for k := 0; k < *regs; k++ {
		rd := RegDelivery{N: k, Name: fmt.Sprintf("%s%d", fanoutRegPrefix, k), Txid: txids[k], CPU: regCPU[k]}
		if k < len(puts) {
			rd.PutMs = ms(puts[k])
		}
		var lat []time.Duration
		for i := range f.arrivals[k] {
			if connLat[i] == 0 {
				continue // never connected: counted as a connect error
			}
			at := f.arrivals[k][i].Load()
			if at == 0 {
				rd.Missed++
				continue
			}
			lat = append(lat, time.Duration(at-1)-starts[k])
		}
		rd.Delivered = len(lat)
		l := summarize(lat)
		rd.P50Ms, rd.P90Ms, rd.P99Ms, rd.MaxMs = l.P50Ms, l.P90Ms, l.P99Ms, l.MaxMs
		if rd.Missed == 0 {
			rd.AllMs = l.MaxMs
		}
		all = append(all, lat...)
		if rd.CPU != nil && rd.CPU.OtherPct < *quietOther {
			out.QuietRegistrations++
			quiet = append(quiet, lat...)
		}
		out.Missed += rd.Missed
		ts := &f.txids[k]
		ts.mu.Lock()
		for id, cnt := range ts.seen {
			if id != txids[k] {
				out.TxidMismatches += cnt
			}
		}
		ts.mu.Unlock()
		out.PerRegistration = append(out.PerRegistration, rd)
	}
	out.Delivery = summarize(all)
	out.DeliveryQuiet = summarize(quiet)
	stopSubs()
	wg.Wait()
	out.Duplicates = int(f.dups.Load())
	out.Reconnects = int(f.reconn.Load())
	out.Errors = int(f.nerr.Load())
	out.ErrorSamples = f.errs.samples

	return emit(&c, out, func(w io.Writer) {
		fmt.Fprintf(w, "fanout %s  entity %s/%s (%d static commands, snapshot %d B)\n", base, out.Type, out.Entity, out.StaticCommands, out.SnapshotBytes)
		fmt.Fprintf(w, "subscribers: %d/%d ready in %.1fs (%.0f/s, %d errors), connect p50 %s p99 %s; source IPs %d, fd limit %d\n",
			out.Connected, out.Subscribers, out.ConnectSeconds, out.ConnectsPerSec, out.ConnectErrors,
			fmtMs(out.ConnectLatency.P50Ms), fmtMs(out.ConnectLatency.P99Ms), len(out.LocalIPs), out.FDLimit)
		fmt.Fprintf(w, "idle memory per subscriber: server RSS %s, Go heap+stack %s (heap %s, stack %s, %.2f goroutines), kernel TCP (both ends) %s, bench RSS %s\n",
			slashKB(out.RSSPerSubscriber), slashKB(out.GoPerSubscriber), slashKB(out.HeapPerSubscriber), slashKB(out.StackPerSubscriber),
			out.GoroutinesPerSub, slashKB(out.KernelPerSubscriber), slashKB(out.BenchPerSubscriber))
		fmt.Fprintf(w, "%5s %-12s %9s %9s %9s %9s %9s %9s %7s %7s %7s\n", "reg", "name", "put", "p50", "p90", "p99", "max", "all", "missed", "server", "other")
		for _, r := range out.PerRegistration {
			var srv, oth float64
			if r.CPU != nil {
				srv, oth = r.CPU.ServerPct, r.CPU.OtherPct
			}
			fmt.Fprintf(w, "%5d %-12s %9s %9s %9s %9s %9s %9s %7d %6.0f%% %6.0f%%\n", r.N, r.Name, fmtMs(r.PutMs), fmtMs(r.P50Ms), fmtMs(r.P90Ms), fmtMs(r.P99Ms), fmtMs(r.MaxMs), fmtMs(r.AllMs), r.Missed, srv, oth)
		}
		d := out.Delivery
		fmt.Fprintf(w, "delivery over %d pairs: p50 %s  p90 %s  p99 %s  p99.9 %s  max %s; missed %d, duplicates %d, txid mismatches %d, reconnects %d, errors %d\n",
			d.N, fmtMs(d.P50Ms), fmtMs(d.P90Ms), fmtMs(d.P99Ms), fmtMs(d.P999Ms), fmtMs(d.MaxMs), out.Missed, out.Duplicates, out.TxidMismatches, out.Reconnects, out.Errors)
		q := out.DeliveryQuiet
		fmt.Fprintf(w, "delivery over the %d registrations with other CPU < %.0f%%: p50 %s  p90 %s  p99 %s  max %s\n",
			out.QuietRegistrations, out.QuietOtherPct, fmtMs(q.P50Ms), fmtMs(q.P90Ms), fmtMs(q.P99Ms), fmtMs(q.MaxMs))
		for _, phase := range []string{"connect", "idle", "registrations"} {
			if s := out.CPU[phase]; s != nil {
				fmt.Fprintf(w, "cpu %-13s %s\n", phase, s)
			}
		}
		printSamples(w, out.ErrorSamples)
	})
}

// slashSaveURL writes the body of a GET to path (profiles from the server's pprof address).
func slashSaveURL(ctx context.Context, u, path string) {
	c := &http.Client{Timeout: 5 * time.Minute}
	status, _, body, err := do(ctx, c, http.MethodGet, u, nil, nil)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("status %d: %.200s", status, body)
	}
	if err == nil {
		err = os.WriteFile(path, body, 0o644)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "entityd-bench: save %s: %v\n", u, err)
	}
}

func slashKB(b float64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f KB", b/1024)
}

func (f *fanout) fail(format string, args ...any) {
	f.nerr.Add(1)
	f.errs.add(format, args...)
}

// subscriber follows the collection over SSE until ctx ends. It releases connecting once
// it has its snapshot and the up-to-date control (or has failed to get them), and
// reconnects from the last offset if the server ends the response.
func (f *fanout) subscriber(ctx context.Context, i int, sem chan struct{}, connecting *sync.WaitGroup, connLat *time.Duration, connErrs *atomic.Int64) {
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		connErrs.Add(1)
		connecting.Done()
		return
	}
	pending := true // still counted in connecting, holding a sem slot
	release := func(ok bool, start time.Time) {
		if !pending {
			return
		}
		pending = false
		if ok {
			*connLat = max(time.Since(start), 1)
			f.ready.Add(1)
		} else {
			connErrs.Add(1)
		}
		<-sem
		connecting.Done()
	}
	defer release(false, time.Time{})
	offset := "-1"
	var scratch []byte
	for attempt := 0; ctx.Err() == nil; attempt++ {
		if attempt > 0 {
			if pending {
				return // the first connection failed: a connect error
			}
			f.reconn.Add(1)
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				return
			}
		}
		start := time.Now()
		err := f.follow(ctx, i, &offset, &scratch, func() { release(true, start) })
		if err != nil && ctx.Err() == nil {
			f.fail("subscriber %d: %v", i, err)
		}
	}
}

// follow runs one SSE response: it reads events until the response ends, recording
// registrations and keeping *offset at the last control event's offset.
func (f *fanout) follow(ctx context.Context, i int, offset *string, scratch *[]byte, ready func()) error {
	d := f.dialer[i%len(f.dialer)]
	conn, err := d.DialContext(ctx, "tcp", f.addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	q := "offset=" + url.QueryEscape(*offset) + "&live=sse"
	if _, err := io.WriteString(conn, "GET "+f.path+"?"+q+" HTTP/1.1\r\nHost: "+f.host+
		"\r\nAccept: text/event-stream\r\nUser-Agent: entityd-bench\r\n\r\n"); err != nil {
		return err
	}
	br := bufio.NewReaderSize(conn, f.bufSize)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 400))
		return fmt.Errorf("GET %s?%s: %d %s", f.path, q, resp.StatusCode, b)
	}
	lr := &slashLineReader{r: bufio.NewReaderSize(resp.Body, f.bufSize/2), scratch: scratch}
	event := ""
	first := *offset == "-1" // the first data event is the snapshot
	for {
		line, err := lr.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil // the server ended the response (lifetime): reconnect
			}
			return err
		}
		switch {
		case len(line) == 0:
			event = ""
		case bytes.HasPrefix(line, []byte("event:")):
			event = string(bytes.TrimSpace(line[6:]))
		case bytes.HasPrefix(line, []byte("data:")):
			data := line[5:]
			switch event {
			case "data":
				if first {
					first = false
					f.snapLen.Store(int64(len(data)))
				}
				f.record(i, data)
			case "control":
				if o := slashField(data, "streamNextOffset"); o != "" {
					*offset = o
				}
				if bytes.Contains(data, []byte(`"upToDate":true`)) {
					ready()
				}
			}
		}
	}
}

// record notes the registrations a data event carries: every event
// `{"type":"slash_command","key":"fanout-<k>",…}` (the row inside "value" repeats the key,
// so only the key right after the type counts) and the txid in that event's headers.
func (f *fanout) record(i int, data []byte) {
	var now int64
	evTag := []byte(`{"type":"slash_command","key":"`)
	for {
		p := bytes.Index(data, evTag)
		if p < 0 {
			return
		}
		data = data[p+len(evTag):]
		ev := data // this event, up to the next one
		if nx := bytes.Index(ev, evTag); nx >= 0 {
			ev = ev[:nx]
		}
		rest, ok := bytes.CutPrefix(ev, []byte(fanoutRegPrefix))
		if !ok {
			continue // a static command (the snapshot)
		}
		q := bytes.IndexByte(rest, '"')
		if q < 0 {
			continue
		}
		k, err := strconv.Atoi(string(rest[:q]))
		if err != nil || k < 0 || k >= f.regs {
			continue
		}
		if now == 0 {
			now = int64(time.Since(f.base)) + 1
		}
		txid := slashField(ev, "txid")
		ts := &f.txids[k]
		ts.mu.Lock()
		ts.seen[txid]++
		ts.mu.Unlock()
		if !f.arrivals[k][i].CompareAndSwap(0, now) {
			f.dups.Add(1)
			continue
		}
		f.counts[k].Add(1)
	}
}

// slashField returns the string value of the first "name":"…" in b (no unescaping: the
// values read with it are offsets, UUIDs and names).
func slashField(b []byte, name string) string {
	tag := `"` + name + `":"`
	p := bytes.Index(b, []byte(tag))
	if p < 0 {
		return ""
	}
	b = b[p+len(tag):]
	q := bytes.IndexByte(b, '"')
	if q < 0 {
		return ""
	}
	return string(b[:q])
}

// slashLineReader returns lines without their line ending, assembling lines longer than the
// buffer in scratch.
type slashLineReader struct {
	r       *bufio.Reader
	scratch *[]byte
}

func (l *slashLineReader) next() ([]byte, error) {
	line, err := l.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		buf := append((*l.scratch)[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = l.r.ReadSlice('\n')
			buf = append(buf, line...)
		}
		if cap(buf) <= 64<<10 {
			*l.scratch = buf
		}
		line = buf
	}
	if err != nil {
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// slashBindNoPort sets IP_BIND_ADDRESS_NO_PORT, so a dial from an explicit source address
// picks its port at connect time (per destination) instead of at bind time.
func slashBindNoPort(network, address string, c syscall.RawConn) error {
	const ipBindAddressNoPort = 24 // linux/in.h
	_ = c.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, ipBindAddressNoPort, 1)
	})
	return nil
}

// slashRaiseFDLimit raises this process's RLIMIT_NOFILE soft limit to at least want (up to
// the hard limit) and returns the soft limit in effect.
func slashRaiseFDLimit(want uint64) (uint64, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, err
	}
	if rl.Cur < want {
		rl.Cur = min(want, rl.Max)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
			return 0, fmt.Errorf("raise the file-descriptor limit: %w", err)
		}
	}
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, err
	}
	return rl.Cur, nil
}

// slashServerFDLimit is the "Max open files" soft limit of pid.
func slashServerFDLimit(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "Max open files") {
			if f := strings.Fields(line[len("Max open files"):]); len(f) > 0 {
				return f[0]
			}
		}
	}
	return ""
}

func slashEphemeralPorts() (int, int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768, 60999
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 32768, 60999
	}
	lo, _ := strconv.Atoi(f[0])
	hi, _ := strconv.Atoi(f[1])
	return lo, hi
}

// slashReadMem reads the server's RSS (pid > 0), its Go heap and stack after a forced GC
// (debugURL set: GET /debug/pprof/heap?gc=1&debug=1) and goroutine count, the kernel's
// TCP memory and this tool's RSS.
func slashReadMem(ctx context.Context, pid int, debugURL string) *FanoutMem {
	m := &FanoutMem{}
	if debugURL != "" {
		c := &http.Client{Timeout: time.Minute}
		d := strings.TrimRight(debugURL, "/")
		if status, _, body, err := do(ctx, c, http.MethodGet, d+"/debug/pprof/heap?gc=1&debug=1", nil, nil); err == nil && status == http.StatusOK {
			for _, line := range strings.Split(string(body), "\n") {
				fields := strings.Fields(strings.TrimPrefix(line, "# "))
				if len(fields) < 3 || fields[1] != "=" {
					continue
				}
				v, _ := strconv.ParseInt(fields[2], 10, 64)
				switch fields[0] {
				case "HeapInuse":
					m.HeapInuse = v
				case "HeapAlloc":
					m.HeapAlloc = v
				case "Stack":
					m.StackInuse = v
				case "Sys":
					m.GoSys = v
				}
			}
		} else {
			fmt.Fprintf(os.Stderr, "fanout: pprof heap at %s: %d %v\n", d, status, err)
		}
		if status, _, body, err := do(ctx, c, http.MethodGet, d+"/debug/pprof/goroutine?debug=1", nil, nil); err == nil && status == http.StatusOK {
			if s, ok := strings.CutPrefix(string(body), "goroutine profile: total "); ok {
				m.Goroutines, _ = strconv.Atoi(strings.Fields(s)[0])
			}
		}
	}
	if pid > 0 {
		m.ServerRSS = slashVmRSS(strconv.Itoa(pid))
	}
	m.BenchRSS = slashVmRSS("self")
	if b, err := os.ReadFile("/proc/net/sockstat"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) > 0 && f[0] == "TCP:" {
				for j := 1; j+1 < len(f); j += 2 {
					v, _ := strconv.ParseInt(f[j+1], 10, 64)
					switch f[j] {
					case "inuse":
						m.TCPInuse = int(v)
					case "mem":
						m.TCPMem = v * int64(os.Getpagesize())
					}
				}
			}
		}
	}
	return m
}

func slashVmRSS(pid string) int64 {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				v, _ := strconv.ParseInt(f[0], 10, 64)
				return v * 1024
			}
		}
	}
	return 0
}

// --- CPU accounting, as bench/run.sh does it: ticks of the server, of PostgreSQL (the
// postmaster and its children), of this process, against the machine's busy ticks.

// SlashCPU is how the machine's CPU was used during a phase, in percent of all cores
// over the phase's wall time, and in CPU seconds.
type SlashCPU struct {
	WallS       float64 `json:"wall_s"`
	Cores       int     `json:"cores"`
	BusyPct     float64 `json:"busy_pct"`
	ServerPct   float64 `json:"server_pct"`
	PostgresPct float64 `json:"postgres_pct"`
	BenchPct    float64 `json:"bench_pct"`
	OtherPct    float64 `json:"other_pct"`
	ServerS     float64 `json:"server_cpu_s"`
	PostgresS   float64 `json:"postgres_cpu_s"`
	BenchS      float64 `json:"bench_cpu_s"`
}

func (s *SlashCPU) String() string {
	return fmt.Sprintf("%.1fs wall: busy %.0f%% = server %.0f%% + postgres %.0f%% + bench %.0f%% + other %.0f%% (of %d cores)",
		s.WallS, s.BusyPct, s.ServerPct, s.PostgresPct, s.BenchPct, s.OtherPct, s.Cores)
}

type slashTicks struct {
	wall                     time.Time
	busy, server, pg, self   int64
	serverPID, pgPID, ncores int
}

func slashReadCPU(serverPID, pgPID int) slashTicks {
	t := slashTicks{wall: time.Now(), serverPID: serverPID, pgPID: pgPID}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) > 8 && f[0] == "cpu":
				for _, j := range []int{1, 2, 3, 6, 7, 8} { // user nice system irq softirq steal
					v, _ := strconv.ParseInt(f[j], 10, 64)
					t.busy += v
				}
			case len(f) > 0 && strings.HasPrefix(f[0], "cpu"):
				t.ncores++
			}
		}
	}
	if serverPID > 0 {
		t.server = slashPIDTicks(strconv.Itoa(serverPID), true)
	}
	if pgPID > 0 {
		t.pg = slashPIDTicks(strconv.Itoa(pgPID), true)
		for _, p := range slashChildPIDs(pgPID) {
			t.pg += slashPIDTicks(strconv.Itoa(p), true)
		}
	}
	t.self = slashPIDTicks("self", false)
	return t
}

func (a slashTicks) split(b slashTicks) *SlashCPU {
	wall := b.wall.Sub(a.wall).Seconds()
	cores := max(1, a.ncores)
	hz := float64(slashClockTicks())
	capacity := wall * float64(cores) * hz / 100
	if capacity <= 0 {
		return &SlashCPU{}
	}
	busy, server, pg, self := b.busy-a.busy, b.server-a.server, b.pg-a.pg, b.self-a.self
	r := func(v float64) float64 { return math.Round(v*10) / 10 }
	return &SlashCPU{
		WallS: r(wall*100) / 100, Cores: cores,
		BusyPct:     r(float64(busy) / capacity),
		ServerPct:   r(float64(server) / capacity),
		PostgresPct: r(float64(pg) / capacity),
		BenchPct:    r(float64(self) / capacity),
		OtherPct:    r(float64(busy-server-pg-self) / capacity),
		ServerS:     float64(server) / hz, PostgresS: float64(pg) / hz, BenchS: float64(self) / hz,
	}
}

// slashPIDTicks is utime+stime of a process (with children: + cutime+cstime).
func slashPIDTicks(pid string, children bool) int64 {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the command (which may contain spaces) start after the last ')'.
	s := string(b)
	if p := strings.LastIndexByte(s, ')'); p >= 0 {
		s = s[p+1:]
	}
	f := strings.Fields(s) // f[0] is field 3 (state): utime is field 14 → f[11]
	if len(f) < 15 {
		return 0
	}
	var sum int64
	last := 12
	if children {
		last = 14
	}
	for j := 11; j <= last; j++ {
		v, _ := strconv.ParseInt(f[j], 10, 64)
		sum += v
	}
	return sum
}

func slashChildPIDs(ppid int) []int {
	var out []int
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	want := strconv.Itoa(ppid)
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		if q := strings.LastIndexByte(s, ')'); q >= 0 {
			s = s[q+1:]
		}
		f := strings.Fields(s) // f[1] is field 4: ppid
		if len(f) > 1 && f[1] == want {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			out = append(out, pid)
		}
	}
	return out
}

var slashClockTicks = sync.OnceValue(func() int64 {
	// AT_CLKTCK (17) from the auxiliary vector; Linux uses 100 everywhere in practice.
	b, err := os.ReadFile("/proc/self/auxv")
	if err == nil {
		for i := 0; i+16 <= len(b); i += 16 {
			if binary.LittleEndian.Uint64(b[i:]) == 17 {
				if v := int64(binary.LittleEndian.Uint64(b[i+8:])); v > 0 {
					return v
				}
			}
		}
	}
	return 100
})
