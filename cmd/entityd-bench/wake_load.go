package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The wake-load half of the wake benchmark: it spawns bench entities on a wake-server,
// sends to them over HTTP (open loop at a fixed rate, or closed loop with C senders),
// waits until every message was handled, fetches what the handler recorded and checks
// and summarizes it. See docs/benchmarks-wake.md.

type wakeLoadFlags struct {
	url, ctl, mode, arrivals, dbURL, pprofOut, label, out string
	entities, conc, pgPID, maxInflight                    int
	rate                                                  float64
	dur, warmup, drainTimeout, settle                     time.Duration
	jsonOut, verify, analyze                              bool
}

func (f *wakeLoadFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "url", "", "wake-server API base URL")
	fs.StringVar(&f.ctl, "ctl", "", "wake-server control base URL")
	fs.StringVar(&f.mode, "mode", "latency", "latency (open loop at -rate) or throughput (closed loop with -c senders)")
	fs.IntVar(&f.entities, "entities", 0, "entities to spawn and send to (0: 100 for latency, 1000 for throughput)")
	fs.Float64Var(&f.rate, "rate", 500, "latency mode: sends per second")
	fs.StringVar(&f.arrivals, "arrivals", "poisson", "latency mode: poisson (exponential gaps) or uniform (fixed gaps)")
	fs.IntVar(&f.maxInflight, "max-inflight", 2048, "latency mode: sends in flight at most (a send due beyond that is skipped and counted)")
	fs.IntVar(&f.conc, "c", 64, "throughput mode: concurrent senders (closed loop)")
	fs.DurationVar(&f.dur, "d", 20*time.Second, "measurement window")
	fs.DurationVar(&f.warmup, "warmup", 5*time.Second, "load before the window (sent, checked, not in the statistics)")
	fs.DurationVar(&f.drainTimeout, "drain-timeout", 120*time.Second, "give up waiting for undelivered messages after this long without progress")
	fs.StringVar(&f.dbURL, "database-url", "", "optional: the server's database, for PostgreSQL counters per message (pg_stat_*)")
	fs.DurationVar(&f.settle, "pg-settle", 11*time.Second, "with -database-url: wait this long after the drain before reading the counters (idle backends flush their statistics after 10 s)")
	fs.BoolVar(&f.analyze, "analyze", true, "with -database-url: ANALYZE the database after spawning, before the load, as autovacuum would on a server that has run for a minute (otherwise whether it ran during the short benchmark decides the plans)")
	fs.IntVar(&f.pgPID, "pg-pid", 0, "optional: the postmaster's pid, for the CPU split (it and its children are PostgreSQL)")
	fs.StringVar(&f.pprofOut, "pprof", "", "optional: write a CPU profile of the server taken over the window to this file")
	fs.BoolVar(&f.verify, "verify", true, "after the drain, check every entity's scanned_seq via GET /_electric/entities/bench/<id>/wake")
	fs.BoolVar(&f.jsonOut, "json", false, "print the result as JSON instead of a table")
	fs.StringVar(&f.out, "out", "", "also write the JSON result to this file")
	fs.StringVar(&f.label, "label", "", "free-form label stored in the result")
}

// sentMsg is one send as the load generator saw it (times are monoNow).
type sentMsg struct {
	e      int32
	n      int64
	sched  int64 // latency mode: when it was due
	t      int64 // just before the request was written (the payload's timestamp)
	resp   int64 // response body read
	ok     bool
	status int
}

// WakeResult is the JSON result of wake-load.
type WakeResult struct {
	Bench       string  `json:"bench"`
	Mode        string  `json:"mode"`
	Label       string  `json:"label,omitempty"`
	Started     string  `json:"started"`
	Run         string  `json:"run"`
	Entities    int     `json:"entities"`
	RatePerSec  float64 `json:"rate_per_sec,omitempty"`
	Arrivals    string  `json:"arrivals,omitempty"`
	Concurrency int     `json:"concurrency,omitempty"`
	DurationS   float64 `json:"duration_s"`
	WarmupS     float64 `json:"warmup_s"`
	BodyBytes   int     `json:"body_bytes"`
	Analyzed    bool    `json:"analyzed"` // ANALYZE ran after spawning, before the load

	Sends      WakeSends       `json:"sends"`
	Delivery   WakeDelivery    `json:"delivery"`
	Latency    WakeLatency     `json:"latency"`
	Throughput WakeThroughput  `json:"throughput"`
	Commits    WakeCommits     `json:"group_commit"`
	CPU        *WakeCPU        `json:"cpu,omitempty"`
	DrainCPU   *WakeCPU        `json:"drain_cpu,omitempty"`
	Postgres   *WakePGCounters `json:"postgres,omitempty"`
	Verify     *WakeVerify     `json:"verify,omitempty"`
	Pass       *WakePass       `json:"pass,omitempty"`
	Errors     []string        `json:"error_samples,omitempty"`
}

// WakeSends counts the HTTP sends.
type WakeSends struct {
	Total        int     `json:"total"` // warm-up included
	OK           int     `json:"ok"`
	Errors       int     `json:"errors"`
	Skipped      int     `json:"skipped"` // latency mode: due while -max-inflight were in flight
	InWindow     int     `json:"in_window"`
	PerSecWindow float64 `json:"per_sec_window"`
}

// WakeDelivery is the exactly-once check over every message of the run (warm-up too).
type WakeDelivery struct {
	Expected      int  `json:"expected"`     // sends answered 200
	Delivered     int  `json:"delivered"`    // of those, handled at least once
	Missing       int  `json:"missing"`      // answered 200, never handled
	Duplicates    int  `json:"duplicates"`   // extra handler runs of a message
	Retries       int  `json:"retries"`      // handler runs with attempt > 1
	Unexpected    int  `json:"unexpected"`   // handled, but the send was not answered 200
	WrongEntity   int  `json:"wrong_entity"` // handled by another entity than it was sent to
	OutOfOrder    int  `json:"out_of_order"` // per entity, handler runs not in stream order
	ExactlyOnceOK bool `json:"exactly_once_ok"`
}

// WakeLatency holds the distributions over the messages sent inside the window.
type WakeLatency struct {
	SendToStart    Latency `json:"send_to_handler_start"`
	SendToResponse Latency `json:"send_to_response"`
	// ResponseToStart is negative when the handler started before the client had the response.
	ResponseToStart Latency `json:"response_to_handler_start"`
	// SchedToStart counts from when the message was due (latency mode): includes the
	// load generator's own delay, so coordinated omission cannot hide a stall.
	SchedToStart *Latency `json:"sched_to_handler_start,omitempty"`
	SchedLag     *Latency `json:"sched_lag,omitempty"`
	Handler      Latency  `json:"handler_run"`
	// AckToNext: per entity, from a handler's return to the start of the next handler run,
	// for next messages that were already committed when the previous run returned: the
	// acknowledgement transaction plus re-reading and dispatching the next message.
	AckToNext Latency `json:"ack_to_next_start"`
}

// WakeThroughput is end-to-end delivery over the window.
type WakeThroughput struct {
	HandledInWindow int     `json:"handled_in_window"` // handler returned inside the window
	HandledPerSec   float64 `json:"handled_per_sec"`
	// AckedPerSec counts only handler runs whose acknowledgement is proven committed inside
	// the window (the entity's next handler run started inside it): a lower bound.
	AckedPerSec float64 `json:"acked_per_sec_lower_bound"`
	// BacklogAtEnd: sent (200) before the window ended but not handled by then.
	BacklogAtEnd int `json:"backlog_at_end"`
	// DrainS: from the last send's response to the last handler return.
	DrainS float64 `json:"drain_s"`
	// SustainedPerSec: messages sent in the window ÷ (window start → the last of them handled).
	SustainedPerSec float64 `json:"sustained_per_sec"`
}

// WakeCommits is the server's group commit over the window.
type WakeCommits struct {
	Transactions     int64   `json:"transactions"`
	Appends          int64   `json:"appends"`
	AppendsPerCommit float64 `json:"appends_per_commit"`
	// AppendsPerMessage: sends plus acknowledgements (plus scan-progress records).
	AppendsPerMessage float64 `json:"appends_per_handled_message"`
	CommitsPerMessage float64 `json:"commits_per_handled_message"`
	MeanCommitMs      float64 `json:"mean_commit_ms"`
	// Hist[i]: transactions with 2^(i-1) ≤ appends < 2^i.
	Hist []int64 `json:"hist"`
}

// WakeCPU splits the machine's CPU over an interval, as a percentage of all cores, and per
// handled message.
type WakeCPU struct {
	WallS          float64 `json:"wall_s"`
	Cores          int     `json:"cores"`
	BusyPct        float64 `json:"busy_pct"`
	ServerPct      float64 `json:"server_pct"`
	PostgresPct    float64 `json:"postgres_pct"`
	LoadgenPct     float64 `json:"loadgen_pct"`
	OtherPct       float64 `json:"other_pct"`
	Messages       int     `json:"messages"`
	ServerUsPerMsg float64 `json:"server_us_per_msg"`
	PGUsPerMsg     float64 `json:"postgres_us_per_msg"`
	LoadUsPerMsg   float64 `json:"loadgen_us_per_msg"`
}

// WakeVerify is the final check against the server's own record of delivery.
type WakeVerify struct {
	Entities     int     `json:"entities"`
	Reached      int     `json:"reached"` // scanned_seq ≥ the entity's last handled message
	Behind       int     `json:"behind"`
	WithFailures int     `json:"with_failures"`
	TookS        float64 `json:"took_s"`
}

// WakePass compares with the targets.
type WakePass struct {
	Target string `json:"target"`
	Pass   bool   `json:"pass"`
}

func runWakeLoad(args []string) error {
	fs := flag.NewFlagSet("wake-load", flag.ExitOnError)
	var f wakeLoadFlags
	f.register(fs)
	_ = fs.Parse(args)
	if f.url == "" || f.ctl == "" {
		return errors.New("wake-load: -url and -ctl are required (see wake-server's -addr-file)")
	}
	if !monoShared {
		return errors.New("wake-load: this platform has no clock shared between processes; use \"entityd-bench wake\"")
	}
	ctx, stop := signalContext()
	defer stop()
	return wakeLoad(ctx, &f)
}

type wakeLoader struct {
	f      *wakeLoadFlags
	client *http.Client
	base   string
	ctl    string
	run    string
	ids    []string
	urls   []string
	errs   errorLog
	bodyN  atomic.Int64
}

func wakeLoad(ctx context.Context, f *wakeLoadFlags) error {
	switch f.mode {
	case "latency", "throughput":
	default:
		return fmt.Errorf("wake-load: unknown -mode %q", f.mode)
	}
	if f.entities <= 0 {
		f.entities = 100
		if f.mode == "throughput" {
			f.entities = 1000
		}
	}
	if f.arrivals != "poisson" && f.arrivals != "uniform" {
		return fmt.Errorf("wake-load: unknown -arrivals %q", f.arrivals)
	}
	l := &wakeLoader{f: f, client: newClient(max(f.conc, 256), false), base: strings.TrimRight(f.url, "/"),
		ctl: strings.TrimRight(f.ctl, "/"), run: runID()}
	started := time.Now().UTC()
	st0, err := l.stats(ctx)
	if err != nil {
		return fmt.Errorf("wake-load: control endpoint: %w", err)
	}
	if _, _, _, err := do(ctx, l.client, http.MethodPost, l.ctl+"/reset", nil, nil); err != nil {
		return err
	}
	_ = st0
	if err := l.spawn(ctx); err != nil {
		return err
	}
	var pgBefore *wakePGSnapshot
	analyzed := false
	if f.dbURL != "" && f.analyze {
		if err := wakeAnalyze(ctx, f.dbURL); err != nil {
			return fmt.Errorf("wake-load: ANALYZE: %w", err)
		}
		analyzed = true
	}
	if f.dbURL != "" {
		if pgBefore, err = takeWakePGSnapshot(ctx, f.dbURL); err != nil {
			return fmt.Errorf("wake-load: PostgreSQL counters: %w", err)
		}
	}

	// Window marks: CPU and commit counters at the window's start and end, and the
	// profile over it.
	t0 := monoNow()
	w0 := t0 + f.warmup.Nanoseconds()
	w1 := w0 + f.dur.Nanoseconds()
	var (
		marks     sync.WaitGroup
		cpuA      wakeCPUSnap
		cpuB      wakeCPUSnap
		stA, stB  wakeServerStats
		markErr   error
		serverPID = st0.PID
	)
	marks.Add(1)
	go func() {
		defer marks.Done()
		wakeSleepUntil(ctx, w0)
		cpuA = takeWakeCPUSnap(serverPID, f.pgPID)
		stA, markErr = l.stats(ctx)
		if f.pprofOut != "" {
			marks.Add(1)
			go func() { defer marks.Done(); l.profile(ctx, f.dur) }()
		}
		wakeSleepUntil(ctx, w1)
		cpuB = takeWakeCPUSnap(serverPID, f.pgPID)
		if s, err := l.stats(ctx); err == nil {
			stB = s
		} else if markErr == nil {
			markErr = err
		}
	}()

	var msgs []*sentMsg
	skipped := 0
	if f.mode == "latency" {
		msgs, skipped = l.openLoop(ctx, t0, w1)
	} else {
		msgs = l.closedLoop(ctx, w1)
	}
	marks.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if markErr != nil {
		return fmt.Errorf("wake-load: server counters: %w", markErr)
	}
	okSends := 0
	var lastResp int64
	for _, m := range msgs {
		if m.ok {
			okSends++
		}
		lastResp = max(lastResp, m.resp)
	}

	// Drain: wait until the handler has seen every message answered 200.
	drainStart := monoNow()
	cpuDrainA := takeWakeCPUSnap(serverPID, f.pgPID)
	last, lastChange := -1, time.Now()
	for {
		st, err := l.stats(ctx)
		if err != nil {
			return err
		}
		if st.RunRecords >= okSends {
			break
		}
		if st.RunRecords != last {
			last, lastChange = st.RunRecords, time.Now()
		} else if time.Since(lastChange) > f.drainTimeout {
			fmt.Fprintf(os.Stderr, "wake-load: %d of %d messages handled, no progress for %s; giving up\n", st.RunRecords, okSends, f.drainTimeout)
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	cpuDrainB := takeWakeCPUSnap(serverPID, f.pgPID)
	_ = drainStart

	var pgAfter *wakePGSnapshot
	if f.dbURL != "" {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(f.settle):
		}
		if pgAfter, err = takeWakePGSnapshot(ctx, f.dbURL); err != nil {
			return fmt.Errorf("wake-load: PostgreSQL counters: %w", err)
		}
	}

	recs, err := l.records(ctx)
	if err != nil {
		return err
	}
	res := analyzeWake(msgs, recs, l.ids, w0, w1)
	res.Bench, res.Mode, res.Label, res.Run = "wake", f.mode, f.label, l.run
	res.Started = started.Format(time.RFC3339)
	res.Entities, res.DurationS, res.WarmupS = f.entities, f.dur.Seconds(), f.warmup.Seconds()
	res.Analyzed = analyzed
	res.BodyBytes = len(l.body(&sentMsg{e: int32(f.entities - 1), n: 1e6, t: monoNow()}))
	if f.mode == "latency" {
		res.RatePerSec, res.Arrivals = f.rate, f.arrivals
	} else {
		res.Concurrency = f.conc
	}
	res.Sends.Skipped = skipped
	res.Throughput.DrainS = math.Max(0, float64(wakeMaxEnd(recs)-lastResp)/1e9)
	res.Commits = wakeCommitDelta(stA.Commit, stB.Commit, res.Throughput.HandledInWindow)
	if cpuA.ok && cpuB.ok {
		c := cpuB.sub(cpuA, res.Throughput.HandledInWindow)
		res.CPU = &c
	}
	// (a drain shorter than a second is below the tick resolution: no split)
	if cpuDrainA.ok && cpuDrainB.ok && cpuDrainB.mono-cpuDrainA.mono >= int64(time.Second) {
		handledInDrain := 0
		for i := range recs {
			if recs[i].End >= cpuDrainA.mono {
				handledInDrain++
			}
		}
		c := cpuDrainB.sub(cpuDrainA, handledInDrain)
		res.DrainCPU = &c
	}
	if pgBefore != nil && pgAfter != nil {
		d := pgAfter.sub(pgBefore, len(recs))
		res.Postgres = &d
	}
	if f.verify {
		v, err := l.verifyScanned(ctx, recs)
		if err != nil {
			return err
		}
		res.Verify = v
	}
	res.Errors = l.errs.samples
	res.Pass = wakePass(&res)
	return emit(&commonFlags{jsonOut: f.jsonOut, out: f.out}, res, func(w io.Writer) { printWake(w, &res) })
}

func wakeSleepUntil(ctx context.Context, mono int64) {
	if d := time.Duration(mono - monoNow()); d > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
}

func (l *wakeLoader) stats(ctx context.Context) (wakeServerStats, error) {
	var st wakeServerStats
	status, _, body, err := do(ctx, l.client, http.MethodGet, l.ctl+"/stats?run="+l.run, nil, nil)
	if err != nil {
		return st, err
	}
	if status != http.StatusOK {
		return st, fmt.Errorf("GET /stats: %d %s", status, body)
	}
	return st, json.Unmarshal(body, &st)
}

func (l *wakeLoader) profile(ctx context.Context, d time.Duration) {
	secs := max(1, int(d.Seconds()))
	status, _, body, err := do(ctx, l.client, http.MethodGet, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", l.ctl, secs), nil, nil)
	if err != nil || status != http.StatusOK {
		fmt.Fprintf(os.Stderr, "wake-load: profile: %v %d\n", err, status)
		return
	}
	if err := os.WriteFile(l.f.pprofOut, body, 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "wake-load: profile: %v\n", err)
	}
}

// spawn creates the entities and waits until the handler has seen their spawn wakes, so
// the measurement starts with every entity created and claimed.
func (l *wakeLoader) spawn(ctx context.Context) error {
	l.ids = make([]string, l.f.entities)
	l.urls = make([]string, l.f.entities)
	for i := range l.ids {
		l.ids[i] = fmt.Sprintf("w-%s-%d", l.run, i)
		l.urls[i] = l.base + "/_electric/entities/" + benchType + "/" + l.ids[i] + "/send"
	}
	if err := parallel(ctx, 16, len(l.ids), func(i int) error {
		status, _, body, err := do(ctx, l.client, http.MethodPut, l.base+"/_electric/entities/"+benchType+"/"+l.ids[i],
			map[string]string{"Content-Type": "application/json"}, []byte(`{}`))
		if err != nil {
			return err
		}
		if status != http.StatusCreated {
			return fmt.Errorf("spawn %s: %d %s", l.ids[i], status, body)
		}
		return nil
	}); err != nil {
		return err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st, err := l.stats(ctx)
		if err != nil {
			return err
		}
		if st.SpawnWakes >= int64(len(l.ids)) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d spawn wakes handled after 2 minutes", st.SpawnWakes, len(l.ids))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// body is the send request: {"payload":{"r":run,"e":entity,"n":number,"t":sent}} (no
// type, no key: the cheapest send the API accepts; a key would add a dedupe row).
func (l *wakeLoader) body(m *sentMsg) []byte {
	b := make([]byte, 0, 96)
	b = append(b, `{"payload":{"r":"`...)
	b = append(b, l.run...)
	b = append(b, `","e":`...)
	b = strconv.AppendInt(b, int64(m.e), 10)
	b = append(b, `,"n":`...)
	b = strconv.AppendInt(b, m.n, 10)
	b = append(b, `,"t":`...)
	b = strconv.AppendInt(b, m.t, 10)
	b = append(b, `}}`...)
	return b
}

var wakeJSONHeader = http.Header{"Content-Type": {"application/json"}}

// send sends m and fills in its times and outcome.
func (l *wakeLoader) send(ctx context.Context, m *sentMsg) {
	m.t = monoNow()
	b := l.body(m)
	url := l.urls[m.e]
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		l.errs.add("%v", err)
		m.resp = monoNow()
		return
	}
	req.Header = wakeJSONHeader.Clone()
	req.ContentLength = int64(len(b))
	resp, err := l.client.Do(req)
	if err != nil {
		m.resp = monoNow()
		if ctx.Err() == nil {
			l.errs.add("POST %s: %v", url, err)
		}
		return
	}
	rb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m.resp = monoNow()
	m.status = resp.StatusCode
	m.ok = resp.StatusCode == http.StatusOK
	if !m.ok {
		l.errs.add("POST %s: %d %s", url, resp.StatusCode, rb)
	}
}

// openLoop sends at f.rate from t0 until w1, to a uniformly random entity each time,
// each send on its own goroutine so a slow response never delays the next send.
func (l *wakeLoader) openLoop(ctx context.Context, t0, w1 int64) ([]*sentMsg, int) {
	rng := rand.New(rand.NewPCG(uint64(t0), 0x5eed))
	gap := 1e9 / l.f.rate
	msgs := make([]*sentMsg, 0, int(l.f.rate*(float64(w1-t0)/1e9)*1.2)+16)
	sem := make(chan struct{}, l.f.maxInflight)
	var wg sync.WaitGroup
	skipped := 0
	next := float64(t0)
	for n := int64(0); ; n++ {
		if l.f.arrivals == "poisson" {
			next += rng.ExpFloat64() * gap
		} else {
			next += gap
		}
		due := int64(next)
		if due >= w1 || ctx.Err() != nil {
			break
		}
		wakeSleepUntil(ctx, due)
		m := &sentMsg{e: int32(rng.IntN(len(l.urls))), n: n, sched: due}
		select {
		case sem <- struct{}{}:
		default:
			skipped++
			continue
		}
		msgs = append(msgs, m)
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.send(ctx, m)
			<-sem
		}()
	}
	wg.Wait()
	return msgs, skipped
}

// closedLoop runs f.conc senders, each sending to a random entity and waiting for the
// response before the next send, until w1.
func (l *wakeLoader) closedLoop(ctx context.Context, w1 int64) []*sentMsg {
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		all []*sentMsg
		n   atomic.Int64
	)
	for w := 0; w < l.f.conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w)+1, uint64(monoNow())))
			mine := make([]*sentMsg, 0, 4096)
			for ctx.Err() == nil && monoNow() < w1 {
				m := &sentMsg{e: int32(rng.IntN(len(l.urls))), n: n.Add(1) - 1}
				l.send(ctx, m)
				mine = append(mine, m)
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return all
}

// records fetches the handler runs of this run from the server.
func (l *wakeLoader) records(ctx context.Context) ([]wakeRec, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.ctl+"/records?run="+l.run, nil)
	if err != nil {
		return nil, err
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /records: %d", resp.StatusCode)
	}
	return parseWakeRecords(resp.Body)
}

func parseWakeRecords(r io.Reader) ([]wakeRec, error) {
	var out []wakeRec
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 8 {
			return nil, fmt.Errorf("bad record line %q", sc.Text())
		}
		var v [7]int64
		for i := range v {
			x, err := strconv.ParseInt(fields[i], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("bad record line %q: %w", sc.Text(), err)
			}
			v[i] = x
		}
		out = append(out, wakeRec{E: int32(v[0]), N: v[1], Sent: v[2], Start: v[3], End: v[4], Seq: v[5], Attempt: int32(v[6]), URL: fields[7]})
	}
	return out, sc.Err()
}

func wakeMaxEnd(recs []wakeRec) int64 {
	var m int64
	for i := range recs {
		m = max(m, recs[i].End)
	}
	return m
}

// analyzeWake checks delivery and computes the statistics. Window statistics take the
// messages whose send timestamp lies in [w0, w1) and the handler runs that returned in it.
func analyzeWake(msgs []*sentMsg, recs []wakeRec, ids []string, w0, w1 int64) WakeResult {
	var res WakeResult
	byN := make(map[int64]*sentMsg, len(msgs))
	for _, m := range msgs {
		byN[m.n] = m
		res.Sends.Total++
		if m.ok {
			res.Sends.OK++
		} else {
			res.Sends.Errors++
		}
		if m.ok && m.t >= w0 && m.t < w1 {
			res.Sends.InWindow++
		}
	}
	res.Sends.PerSecWindow = float64(res.Sends.InWindow) / (float64(w1-w0) / 1e9)

	// Exactly once, right entity, stream order.
	d := &res.Delivery
	d.Expected = res.Sends.OK
	seen := make(map[int64]int, len(recs))
	perEntity := map[int32][]int{}
	for i := range recs {
		r := &recs[i]
		seen[r.N]++
		if seen[r.N] > 1 {
			d.Duplicates++
		}
		if r.Attempt > 1 {
			d.Retries++
		}
		m := byN[r.N]
		if m == nil || !m.ok {
			if seen[r.N] == 1 {
				d.Unexpected++
			}
		} else if m.e != r.E || int(r.E) >= len(ids) || !strings.HasSuffix(r.URL, "/"+ids[r.E]) {
			d.WrongEntity++
		}
		perEntity[r.E] = append(perEntity[r.E], i)
	}
	for _, m := range msgs {
		if !m.ok {
			continue
		}
		if seen[m.n] > 0 {
			d.Delivered++
		} else {
			d.Missing++
		}
	}
	var ackGaps []time.Duration
	handled, acked := 0, 0
	for _, idx := range perEntity {
		slices.SortFunc(idx, func(a, b int) int { return int(recs[a].Start - recs[b].Start) })
		for j, i := range idx {
			r := &recs[i]
			if j > 0 && recs[idx[j-1]].Seq >= r.Seq {
				d.OutOfOrder++
			}
			if r.End >= w0 && r.End < w1 {
				handled++
				if j+1 < len(idx) && recs[idx[j+1]].Start < w1 {
					acked++
				}
			}
			if j+1 < len(idx) && r.End >= w0 && r.End < w1 {
				next := &recs[idx[j+1]]
				if nm := byN[next.N]; nm != nil && nm.resp > 0 && nm.resp <= r.End {
					ackGaps = append(ackGaps, time.Duration(next.Start-r.End))
				}
			}
		}
	}
	d.ExactlyOnceOK = d.Missing == 0 && d.Duplicates == 0 && d.Unexpected == 0 && d.WrongEntity == 0 && d.OutOfOrder == 0

	// Latencies of the messages sent in the window.
	var s2s, s2r, r2s, sch2s, lag, run []time.Duration
	hasSched := false
	recByN := make(map[int64]*wakeRec, len(recs))
	for i := range recs {
		if recByN[recs[i].N] == nil {
			recByN[recs[i].N] = &recs[i]
		}
	}
	backlog := 0
	var lastOfWindow int64
	for _, m := range msgs {
		if !m.ok || m.t >= w1 {
			continue
		}
		r := recByN[m.n]
		if r == nil || r.End >= w1 {
			backlog++
		}
		if m.t < w0 || r == nil {
			continue
		}
		lastOfWindow = max(lastOfWindow, r.End)
		s2s = append(s2s, time.Duration(r.Start-m.t))
		s2r = append(s2r, time.Duration(m.resp-m.t))
		r2s = append(r2s, time.Duration(r.Start-m.resp))
		run = append(run, time.Duration(r.End-r.Start))
		if m.sched > 0 {
			hasSched = true
			sch2s = append(sch2s, time.Duration(r.Start-m.sched))
			lag = append(lag, time.Duration(m.t-m.sched))
		}
	}
	res.Latency = WakeLatency{SendToStart: summarize(s2s), SendToResponse: summarize(s2r), ResponseToStart: summarize(r2s),
		Handler: summarize(run), AckToNext: summarize(ackGaps)}
	if hasSched {
		a, b := summarize(sch2s), summarize(lag)
		res.Latency.SchedToStart, res.Latency.SchedLag = &a, &b
	}
	win := float64(w1-w0) / 1e9
	res.Throughput = WakeThroughput{HandledInWindow: handled, HandledPerSec: float64(handled) / win,
		AckedPerSec: float64(acked) / win, BacklogAtEnd: backlog}
	if lastOfWindow > w0 {
		res.Throughput.SustainedPerSec = float64(res.Sends.InWindow) / (float64(lastOfWindow-w0) / 1e9)
	}
	return res
}

func wakeCommitDelta(a, b wakeCommitStats, handled int) WakeCommits {
	c := WakeCommits{Transactions: b.Commits - a.Commits, Appends: b.Appends - a.Appends}
	if c.Transactions > 0 {
		c.AppendsPerCommit = float64(c.Appends) / float64(c.Transactions)
		c.MeanCommitMs = float64(b.TookNs-a.TookNs) / float64(c.Transactions) / 1e6
	}
	if handled > 0 {
		c.AppendsPerMessage = float64(c.Appends) / float64(handled)
		c.CommitsPerMessage = float64(c.Transactions) / float64(handled)
	}
	if len(a.Hist) == len(b.Hist) {
		c.Hist = make([]int64, len(b.Hist))
		for i := range b.Hist {
			c.Hist[i] = b.Hist[i] - a.Hist[i]
		}
		for len(c.Hist) > 0 && c.Hist[len(c.Hist)-1] == 0 {
			c.Hist = c.Hist[:len(c.Hist)-1]
		}
	}
	return c
}

// verifyScanned checks, for every entity, that the server's delivery record
// (entity_wake.scanned_seq, via GET …/wake) reached the entity's last handled message:
// its acknowledgement committed. It also counts entities with failures.
func (l *wakeLoader) verifyScanned(ctx context.Context, recs []wakeRec) (*WakeVerify, error) {
	start := time.Now()
	last := make([]int64, len(l.ids))
	for i := range recs {
		if e := recs[i].E; int(e) < len(last) {
			last[e] = max(last[e], recs[i].Seq)
		}
	}
	var reached, behind, failures atomic.Int64
	err := parallel(ctx, 8, len(l.ids), func(i int) error {
		for attempt := 0; ; attempt++ {
			status, _, body, err := do(ctx, l.client, http.MethodGet, l.base+"/_electric/entities/"+benchType+"/"+l.ids[i]+"/wake", nil, nil)
			if err != nil {
				return err
			}
			if status != http.StatusOK {
				return fmt.Errorf("GET wake status of %s: %d %s", l.ids[i], status, body)
			}
			var st struct {
				ScannedSeq int64             `json:"scanned_seq"`
				Failures   []json.RawMessage `json:"failures"`
			}
			if err := json.Unmarshal(body, &st); err != nil {
				return err
			}
			if st.ScannedSeq >= last[i] {
				reached.Add(1)
				if len(st.Failures) > 0 {
					failures.Add(1)
				}
				return nil
			}
			if attempt >= 50 { // an acknowledgement takes milliseconds; 5 s is plenty
				behind.Add(1)
				return nil
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	if err != nil {
		return nil, err
	}
	return &WakeVerify{Entities: len(l.ids), Reached: int(reached.Load()), Behind: int(behind.Load()),
		WithFailures: int(failures.Load()), TookS: time.Since(start).Seconds()}, nil
}

// wakePass applies the targets: latency mode at 500/s over 100 entities, p50 ≤ 5
// ms and p99 ≤ 25 ms send → handler start; throughput mode ≥ 5,000 messages/s end to end
// over 1,000 entities. Both also require exactly-once delivery.
func wakePass(r *WakeResult) *WakePass {
	ok := r.Delivery.ExactlyOnceOK && (r.Verify == nil || r.Verify.Behind == 0)
	switch r.Mode {
	case "latency":
		l := r.Latency.SendToStart
		return &WakePass{Target: "send→handler start p50 ≤ 5 ms, p99 ≤ 25 ms (at 500 sends/s over 100 entities), exactly once",
			Pass: ok && l.N > 0 && l.P50Ms <= 5 && l.P99Ms <= 25}
	default:
		return &WakePass{Target: "≥ 5,000 messages/s send→no-op handler→ack (over 1,000 entities), sustained, exactly once",
			Pass: ok && r.Throughput.SustainedPerSec >= 5000 && r.Throughput.AckedPerSec >= 5000}
	}
}

func printWake(w io.Writer, r *WakeResult) {
	if r.Mode == "latency" {
		fmt.Fprintf(w, "wake latency  entities=%d  rate=%.0f/s (%s)  d=%gs (+%gs warm-up)  run=%s\n",
			r.Entities, r.RatePerSec, r.Arrivals, r.DurationS, r.WarmupS, r.Run)
	} else {
		fmt.Fprintf(w, "wake throughput  entities=%d  c=%d  d=%gs (+%gs warm-up)  run=%s\n",
			r.Entities, r.Concurrency, r.DurationS, r.WarmupS, r.Run)
	}
	fmt.Fprintf(w, "sends: %d (%d ok, %d errors, %d skipped); %d in window = %.0f/s\n",
		r.Sends.Total, r.Sends.OK, r.Sends.Errors, r.Sends.Skipped, r.Sends.InWindow, r.Sends.PerSecWindow)
	d := r.Delivery
	fmt.Fprintf(w, "delivery: %d/%d delivered, missing %d, duplicates %d, retries %d, unexpected %d, wrong entity %d, out of order %d → exactly once: %v\n",
		d.Delivered, d.Expected, d.Missing, d.Duplicates, d.Retries, d.Unexpected, d.WrongEntity, d.OutOfOrder, d.ExactlyOnceOK)
	fmt.Fprintf(w, "%-28s %8s %9s %9s %9s %9s %9s %9s\n", "latency", "n", "mean", "p50", "p90", "p99", "p99.9", "max")
	row := func(name string, l Latency) {
		fmt.Fprintf(w, "%-28s %8d %9s %9s %9s %9s %9s %9s\n", name, l.N, fmtMs(l.MeanMs), fmtMs(l.P50Ms), fmtMs(l.P90Ms),
			fmtMs(l.P99Ms), fmtMs(l.P999Ms), fmtMs(l.MaxMs))
	}
	row("send → handler start", r.Latency.SendToStart)
	row("send → response", r.Latency.SendToResponse)
	row("response → handler start", r.Latency.ResponseToStart)
	if r.Latency.SchedToStart != nil {
		row("due → handler start", *r.Latency.SchedToStart)
		row("due → send (generator lag)", *r.Latency.SchedLag)
	}
	row("handler run", r.Latency.Handler)
	row("handler return → next start", r.Latency.AckToNext)
	t := r.Throughput
	fmt.Fprintf(w, "handled in window: %d = %.0f/s (acks proven in window ≥ %.0f/s); backlog at end %d; drain %.2fs; sustained %.0f/s\n",
		t.HandledInWindow, t.HandledPerSec, t.AckedPerSec, t.BacklogAtEnd, t.DrainS, t.SustainedPerSec)
	c := r.Commits
	fmt.Fprintf(w, "group commit: %d transactions, %.1f appends each (%.2f appends, %.3f commits per message), mean %.2f ms; hist %v\n",
		c.Transactions, c.AppendsPerCommit, c.AppendsPerMessage, c.CommitsPerMessage, c.MeanCommitMs, c.Hist)
	for _, x := range []struct {
		name string
		c    *WakeCPU
	}{{"cpu (window)", r.CPU}, {"cpu (drain)", r.DrainCPU}} {
		if x.c == nil {
			continue
		}
		fmt.Fprintf(w, "%s: %.1fs × %d cores, busy %.0f%%: server %.0f%%, postgres %.0f%%, loadgen %.0f%%, other %.0f%%; per message µs: server %.0f, postgres %.0f, loadgen %.0f\n",
			x.name, x.c.WallS, x.c.Cores, x.c.BusyPct, x.c.ServerPct, x.c.PostgresPct, x.c.LoadgenPct, x.c.OtherPct,
			x.c.ServerUsPerMsg, x.c.PGUsPerMsg, x.c.LoadUsPerMsg)
	}
	if p := r.Postgres; p != nil {
		printWakePGCounters(w, p)
	}
	if v := r.Verify; v != nil {
		fmt.Fprintf(w, "verify: scanned_seq reached the last handled message on %d/%d entities (%d behind, %d with failures) in %.1fs\n",
			v.Reached, v.Entities, v.Behind, v.WithFailures, v.TookS)
	}
	if r.Pass != nil {
		verdict := "FAIL"
		if r.Pass.Pass {
			verdict = "PASS"
		}
		fmt.Fprintf(w, "target: %s → %s\n", r.Pass.Target, verdict)
	}
	printSamples(w, r.Errors)
}
