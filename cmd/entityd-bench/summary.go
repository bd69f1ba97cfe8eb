package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// PgbenchResult is what bench/pgbench.sh writes per client count.
type PgbenchResult struct {
	Bench           string  `json:"bench"`
	Clients         int     `json:"clients"`
	TPS             float64 `json:"tps"`
	LatencyAvgMs    float64 `json:"latency_avg_ms"`
	LatencyStddevMs float64 `json:"latency_stddev_ms"`
	DurationS       float64 `json:"duration_s"`
}

// rep is one repetition of bench/run.sh: the files of one repN directory.
type rep struct {
	name     string
	send     map[int]*SendResult
	pgbench  map[int]*PgbenchResult
	append   map[string]*AppendResult
	longpoll map[string]*LongPollResult
	catchup  map[string]*CatchupResult
	cpu      map[string]*CPUSplit
}

// CPUSplit is what bench/run.sh measured about CPU use during one benchmark, in percent
// of all cores: who used them, and how much went to processes not part of the benchmark.
type CPUSplit struct {
	WallS        float64 `json:"wall_s"`
	Cores        int     `json:"cores"`
	BusyPct      float64 `json:"busy_pct"`
	EntitydPct   float64 `json:"entityd_pct"`
	ReferencePct float64 `json:"reference_pct"`
	PostgresPct  float64 `json:"postgres_pct"`
	LoadgenPct   float64 `json:"loadgen_pct"`
	OtherPct     float64 `json:"other_pct"`
}

func loadJSON(path string, v any) (bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	return true, nil
}

func loadRep(dir string, clients []int) (*rep, error) {
	r := &rep{name: filepath.Base(dir), send: map[int]*SendResult{}, pgbench: map[int]*PgbenchResult{},
		append: map[string]*AppendResult{}, longpoll: map[string]*LongPollResult{}, catchup: map[string]*CatchupResult{},
		cpu: map[string]*CPUSplit{}}
	for _, name := range cpuNames(clients) {
		c := &CPUSplit{}
		if ok, err := loadJSON(filepath.Join(dir, "cpu-"+name+".json"), c); err != nil {
			return nil, err
		} else if ok {
			r.cpu[name] = c
		}
	}
	for _, c := range clients {
		s := &SendResult{}
		if ok, err := loadJSON(filepath.Join(dir, fmt.Sprintf("send-c%d.json", c)), s); err != nil {
			return nil, err
		} else if ok {
			r.send[c] = s
		}
		p := &PgbenchResult{}
		if ok, err := loadJSON(filepath.Join(dir, fmt.Sprintf("pgbench-c%d.json", c)), p); err != nil {
			return nil, err
		} else if ok {
			r.pgbench[c] = p
		}
	}
	for _, server := range servers {
		a := &AppendResult{}
		if ok, err := loadJSON(filepath.Join(dir, "append-"+server+".json"), a); err != nil {
			return nil, err
		} else if ok {
			r.append[server] = a
		}
		l := &LongPollResult{}
		if ok, err := loadJSON(filepath.Join(dir, "longpoll-"+server+".json"), l); err != nil {
			return nil, err
		} else if ok {
			r.longpoll[server] = l
		}
		c := &CatchupResult{}
		if ok, err := loadJSON(filepath.Join(dir, "catchup-"+server+".json"), c); err != nil {
			return nil, err
		} else if ok {
			r.catchup[server] = c
		}
	}
	return r, nil
}

var servers = []string{"entityd", "reference"}

func cpuNames(clients []int) []string {
	var names []string
	for _, c := range clients {
		names = append(names, fmt.Sprintf("send-c%d", c))
	}
	names = append(names, "pgbench")
	for _, b := range []string{"append", "longpoll", "catchup"} {
		for _, s := range servers {
			names = append(names, b+"-"+s)
		}
	}
	return names
}

// series is one metric across repetitions.
type series []float64

func (s series) ok() bool { return len(s) > 0 }

func (s series) median() float64 {
	if len(s) == 0 {
		return 0
	}
	v := slices.Clone(s)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// show formats the median and, with more than one value, the range: "5,210 (4,980–5,400)".
func (s series) show(format func(float64) string) string {
	if len(s) == 0 {
		return "–"
	}
	m := format(s.median())
	if len(s) == 1 {
		return m
	}
	return fmt.Sprintf("%s (%s–%s)", m, format(slices.Min(s)), format(slices.Max(s)))
}

func collect[T any](reps []*rep, get func(*rep) (T, bool), val func(T) float64) series {
	var s series
	for _, r := range reps {
		if v, ok := get(r); ok {
			s = append(s, val(v))
		}
	}
	return s
}

func rate(v float64) string { return thousands(v) }

func thousands(v float64) string {
	n := int64(v + 0.5)
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func msf(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	case v >= 10:
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.2f ms", v)
}

func ratio(v float64) string { return fmt.Sprintf("%.2f×", v) }
func mbps(v float64) string  { return fmt.Sprintf("%.1f", v) }

func passFail(ok bool) string {
	if ok {
		return "**PASS**"
	}
	return "**FAIL**"
}

func runSummary(args []string) error {
	fset := flag.NewFlagSet("summary", flag.ExitOnError)
	dir := fset.String("dir", "", "results directory of bench/run.sh (holds meta.txt and rep*/)")
	clientsFlag := fset.String("clients", "1,16,64", "client counts of the send/pgbench runs")
	_ = fset.Parse(args)
	if *dir == "" {
		return fmt.Errorf("-dir is required")
	}
	var clients []int
	for _, f := range strings.Split(*clientsFlag, ",") {
		var c int
		if _, err := fmt.Sscan(strings.TrimSpace(f), &c); err != nil {
			return fmt.Errorf("-clients: %w", err)
		}
		clients = append(clients, c)
	}
	repDirs, err := filepath.Glob(filepath.Join(*dir, "rep*"))
	if err != nil {
		return err
	}
	slices.Sort(repDirs)
	var reps []*rep
	for _, d := range repDirs {
		r, err := loadRep(d, clients)
		if err != nil {
			return err
		}
		reps = append(reps, r)
	}
	if len(reps) == 0 {
		return fmt.Errorf("no rep* directories under %s", *dir)
	}
	writeSummary(os.Stdout, *dir, clients, reps)
	return nil
}

func writeSummary(w io.Writer, dir string, clients []int, reps []*rep) {
	fmt.Fprintf(w, "# entityd benchmark summary\n\n")
	if meta, err := os.ReadFile(filepath.Join(dir, "meta.txt")); err == nil {
		fmt.Fprintf(w, "| | |\n|---|---|\n")
		for _, line := range strings.Split(strings.TrimSpace(string(meta)), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if ok {
				fmt.Fprintf(w, "| %s | %s |\n", strings.TrimSpace(k), strings.ReplaceAll(strings.TrimSpace(v), "|", "/"))
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%d repetition(s); each cell is the median, with (min–max) across repetitions. "+
		"Server, Postgres and the load generator share the same cores.\n\n", len(reps))

	// Send vs pgbench.
	fmt.Fprintf(w, "## Send path vs pgbench (fsync on)\n\n")
	fmt.Fprintf(w, "| clients | sends/s | p50 | p90 | p99 | p99.9 | errors | pgbench tx/s | pgbench latency avg | pgbench latency stddev | sends/s ÷ tx/s |\n")
	fmt.Fprintf(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	type sendRow struct{ sends, p99, ratio series }
	rows := map[int]sendRow{}
	for _, c := range clients {
		getS := func(r *rep) (*SendResult, bool) { s, ok := r.send[c]; return s, ok }
		getP := func(r *rep) (*PgbenchResult, bool) { p, ok := r.pgbench[c]; return p, ok }
		sends := collect(reps, getS, func(s *SendResult) float64 { return s.SendsPerSec })
		tps := collect(reps, getP, func(p *PgbenchResult) float64 { return p.TPS })
		var ratios series
		for _, r := range reps {
			s, ok1 := r.send[c]
			p, ok2 := r.pgbench[c]
			if ok1 && ok2 && p.TPS > 0 {
				ratios = append(ratios, s.SendsPerSec/p.TPS)
			}
		}
		p99 := collect(reps, getS, func(s *SendResult) float64 { return s.Latency.P99Ms })
		rows[c] = sendRow{sends, p99, ratios}
		fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c,
			sends.show(rate),
			collect(reps, getS, func(s *SendResult) float64 { return s.Latency.P50Ms }).show(msf),
			collect(reps, getS, func(s *SendResult) float64 { return s.Latency.P90Ms }).show(msf),
			p99.show(msf),
			collect(reps, getS, func(s *SendResult) float64 { return s.Latency.P999Ms }).show(msf),
			collect(reps, getS, func(s *SendResult) float64 { return float64(s.Errors) }).show(thousands),
			tps.show(rate),
			collect(reps, getP, func(p *PgbenchResult) float64 { return p.LatencyAvgMs }).show(msf),
			collect(reps, getP, func(p *PgbenchResult) float64 { return p.LatencyStddevMs }).show(msf),
			ratios.show(ratio))
	}
	fmt.Fprintln(w)

	// Durable Streams.
	fmt.Fprintf(w, "## Durable Streams: entityd (Postgres, fsync on) vs the Node reference (in memory)\n\n")
	fmt.Fprintf(w, "| metric | entityd | reference | entityd ÷ reference |\n|---|---:|---:|---:|\n")
	get := func(server string) (func(*rep) (*AppendResult, bool), func(*rep) (*LongPollResult, bool), func(*rep) (*CatchupResult, bool)) {
		return func(r *rep) (*AppendResult, bool) { a, ok := r.append[server]; return a, ok },
			func(r *rep) (*LongPollResult, bool) { l, ok := r.longpoll[server]; return l, ok },
			func(r *rep) (*CatchupResult, bool) { c, ok := r.catchup[server]; return c, ok }
	}
	ea, el, ec := get("entityd")
	ra, rl, rc := get("reference")
	pairRatio := func(f func(r *rep) (float64, float64, bool)) series {
		var s series
		for _, r := range reps {
			if a, b, ok := f(r); ok && b > 0 {
				s = append(s, a/b)
			}
		}
		return s
	}
	appendRatio := pairRatio(func(r *rep) (float64, float64, bool) {
		a, ok1 := r.append["entityd"]
		b, ok2 := r.append["reference"]
		if !ok1 || !ok2 {
			return 0, 0, false
		}
		return a.AppendsPerSec, b.AppendsPerSec, true
	})
	lpRatio := func(val func(*LongPollResult) float64) series {
		return pairRatio(func(r *rep) (float64, float64, bool) {
			a, ok1 := r.longpoll["entityd"]
			b, ok2 := r.longpoll["reference"]
			if !ok1 || !ok2 {
				return 0, 0, false
			}
			return val(a), val(b), true
		})
	}
	cuRatio := func(val func(*CatchupResult) float64) series {
		return pairRatio(func(r *rep) (float64, float64, bool) {
			a, ok1 := r.catchup["entityd"]
			b, ok2 := r.catchup["reference"]
			if !ok1 || !ok2 {
				return 0, 0, false
			}
			return val(a), val(b), true
		})
	}
	aRow := func(name string, val func(*AppendResult) float64, f func(float64) string, withRatio bool) series {
		e := collect(reps, ea, val)
		rr := "–"
		if withRatio {
			rr = pairRatio(func(r *rep) (float64, float64, bool) {
				a, ok1 := r.append["entityd"]
				b, ok2 := r.append["reference"]
				if !ok1 || !ok2 {
					return 0, 0, false
				}
				return val(a), val(b), true
			}).show(ratio)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", name, e.show(f), collect(reps, ra, val).show(f), rr)
		return e
	}
	writers := ""
	if a, ok := firstOf(reps, ea); ok {
		writers = fmt.Sprintf(" (%d writers, %d streams, %d B JSON)", a.Writers, a.Streams, a.MessageBytes)
	}
	aRow("append/s"+writers, func(a *AppendResult) float64 { return a.AppendsPerSec }, rate, true)
	aRow("append latency p50", func(a *AppendResult) float64 { return a.Latency.P50Ms }, msf, true)
	aRow("append latency p99", func(a *AppendResult) float64 { return a.Latency.P99Ms }, msf, true)
	lRow := func(name string, val func(*LongPollResult) float64) (series, series) {
		e, r := collect(reps, el, val), collect(reps, rl, val)
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", name, e.show(msf), r.show(msf), lpRatio(val).show(ratio))
		return e, r
	}
	lpP50e, lpP50r := lRow("long-poll round trip p50", func(l *LongPollResult) float64 { return l.RTT.P50Ms })
	lpP99e, _ := lRow("long-poll round trip p99", func(l *LongPollResult) float64 { return l.RTT.P99Ms })
	lRow("long-poll round trip mean", func(l *LongPollResult) float64 { return l.RTT.MeanMs })
	lRow("…of which the writer's append (p50)", func(l *LongPollResult) float64 { return l.Append.P50Ms })
	pingKinds := []string{}
	for _, g := range []func(*rep) (*LongPollResult, bool){el, rl} {
		if l, ok := firstOf(reps, g); ok {
			pingKinds = append(pingKinds, l.PingKind)
		}
	}
	lRow("ping p50 ("+strings.Join(pingKinds, " / ")+")", func(l *LongPollResult) float64 { return l.Ping.P50Ms })
	lRow("HEAD stream p50", func(l *LongPollResult) float64 { return l.Head.P50Ms })
	lRow("long-poll overhead p50 (RTT − ping)", func(l *LongPollResult) float64 { return l.OverheadP50Ms })
	cRow := func(name string, val func(*CatchupResult) float64, f func(float64) string) (series, series) {
		e, r := collect(reps, ec, val), collect(reps, rc, val)
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", name, e.show(f), r.show(f), cuRatio(val).show(ratio))
		return e, r
	}
	msgs := ""
	if c, ok := firstOf(reps, ec); ok {
		msgs = fmt.Sprintf(" (%s × %d B)", thousands(float64(c.Messages)), c.MessageBytes)
	}
	cuE, cuR := cRow("catch-up MB/s"+msgs, func(c *CatchupResult) float64 { return c.Median.MBPerSec }, mbps)
	cRow("catch-up messages/s", func(c *CatchupResult) float64 { return c.Median.MsgsPerSec }, rate)
	cRow("catch-up requests", func(c *CatchupResult) float64 { return float64(c.Median.Requests) }, thousands)
	fmt.Fprintln(w)

	// CPU split.
	fmt.Fprintf(w, "## Where the CPU went\n\n")
	fmt.Fprintf(w, "Percent of all cores during each benchmark (warm-up and setup included), median across repetitions. "+
		"\"other\" is CPU used by processes outside the benchmark (the machine may be shared): a high value means the run was disturbed "+
		"and its throughput understates the server. CPU per operation does not depend much on such interference: "+
		"it is the CPU time of each component divided by the operations done (rate × (duration + warm-up); for pgbench the "+
		"transactions of all client counts).\n\n")
	fmt.Fprintf(w, "The last column divides all cores by the total CPU per operation: the rate the benchmark would reach "+
		"if it had the machine to itself and stayed CPU-bound (an estimate, not a measurement; shown only for the "+
		"benchmarks that are CPU-bound: the highest send concurrency and the 64-writer appends).\n\n")
	fmt.Fprintf(w, "| benchmark | server | postgres | load generator | other | idle | CPU µs/op: server | postgres | load generator | total | ops/s if alone (est.) |\n")
	fmt.Fprintf(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	pct := func(v float64) string { return fmt.Sprintf("%.0f%%", v) }
	us := func(v float64) string { return fmt.Sprintf("%.0f", v) }
	for _, name := range cpuNames(clients) {
		g := func(r *rep) (*CPUSplit, bool) { c, ok := r.cpu[name]; return c, ok }
		if _, ok := firstOf(reps, g); !ok {
			continue
		}
		server := func(c *CPUSplit) float64 { return c.EntitydPct + c.ReferencePct }
		// ops done while the CPU was measured, per repetition
		ops := func(r *rep) float64 { return opsDuring(r, name, clients) }
		perOp := func(part func(*CPUSplit) float64) series {
			var s series
			for _, r := range reps {
				c, ok := r.cpu[name]
				n := ops(r)
				if ok && n > 0 {
					s = append(s, part(c)/100*float64(c.Cores)*c.WallS/n*1e6)
				}
			}
			return s
		}
		total := perOp(func(c *CPUSplit) float64 { return c.EntitydPct + c.ReferencePct + c.PostgresPct + c.LoadgenPct })
		var alone series
		for _, r := range reps {
			c, ok := r.cpu[name]
			n := ops(r)
			busy := (c.EntitydPct + c.ReferencePct + c.PostgresPct + c.LoadgenPct) / 100 * float64(c.Cores) * c.WallS
			cpuBound := strings.HasPrefix(name, "append-") || name == fmt.Sprintf("send-c%d", clients[len(clients)-1])
			if ok && n > 0 && busy > 0 && cpuBound {
				alone = append(alone, float64(c.Cores)*n/busy)
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", name,
			collect(reps, g, server).show(pct),
			collect(reps, g, func(c *CPUSplit) float64 { return c.PostgresPct }).show(pct),
			collect(reps, g, func(c *CPUSplit) float64 { return c.LoadgenPct }).show(pct),
			collect(reps, g, func(c *CPUSplit) float64 { return c.OtherPct }).show(pct),
			collect(reps, g, func(c *CPUSplit) float64 { return 100 - c.BusyPct }).show(pct),
			perOp(server).show(us),
			perOp(func(c *CPUSplit) float64 { return c.PostgresPct }).show(us),
			perOp(func(c *CPUSplit) float64 { return c.LoadgenPct }).show(us),
			total.show(us), alone.show(rate))
	}
	fmt.Fprintln(w)

	// Targets.
	fmt.Fprintf(w, "## Targets\n\n| target | measured (median) | result |\n|---|---:|---|\n")
	hi := clients[len(clients)-1]
	if r, ok := rows[hi]; ok && r.sends.ok() {
		fmt.Fprintf(w, "| send: ≥ 5,000 sends/s at %d clients | %s | %s |\n", hi, rate(r.sends.median()), passFail(r.sends.median() >= 5000))
		fmt.Fprintf(w, "| send: p99 ≤ 50 ms at %d clients | %s | %s |\n", hi, msf(r.p99.median()), passFail(r.p99.median() <= 50))
	}
	for _, c := range clients {
		if r, ok := rows[c]; ok && r.ratio.ok() {
			label := "reported"
			if c == hi {
				label = passFail(r.ratio.median() >= 1.0)
			} else if r.ratio.median() >= 1.0 {
				label = "reported (≥ 1.0)"
			} else {
				label = "reported (< 1.0)"
			}
			fmt.Fprintf(w, "| send: sends/s ÷ pgbench tx/s ≥ 1.0 at %d clients | %s | %s |\n", c, ratio(r.ratio.median()), label)
		}
	}
	if appendRatio.ok() {
		fmt.Fprintf(w, "| streams: append/s ≥ 1.0× the Node reference | %s | %s |\n", ratio(appendRatio.median()), passFail(appendRatio.median() >= 1.0))
	}
	if lpP50e.ok() && lpP50r.ok() {
		fmt.Fprintf(w, "| streams: long-poll p50 ≤ the reference's p50 | %s vs %s | %s |\n", msf(lpP50e.median()), msf(lpP50r.median()), passFail(lpP50e.median() <= lpP50r.median()))
	}
	if lpP99e.ok() {
		fmt.Fprintf(w, "| streams: long-poll p99 ≤ 10 ms | %s | %s |\n", msf(lpP99e.median()), passFail(lpP99e.median() <= 10))
	}
	if cuE.ok() {
		ref := "–"
		if cuR.ok() {
			ref = mbps(cuR.median())
		}
		fmt.Fprintf(w, "| streams: catch-up MB/s reported | %s MB/s (reference %s MB/s) | reported |\n", mbps(cuE.median()), ref)
	}
}

func firstOf[T any](reps []*rep, get func(*rep) (T, bool)) (T, bool) {
	for _, r := range reps {
		if v, ok := get(r); ok {
			return v, true
		}
	}
	var zero T
	return zero, false
}

// opsDuring is how many operations a benchmark did while its CPU was measured (0 when
// unknown, e.g. long-poll and catch-up, which are latency and read benchmarks).
func opsDuring(r *rep, name string, clients []int) float64 {
	for _, c := range clients {
		if name == fmt.Sprintf("send-c%d", c) {
			if s, ok := r.send[c]; ok {
				return s.SendsPerSec * (s.DurationS + s.WarmupS)
			}
			return 0
		}
	}
	if name == "pgbench" {
		total := 0.0
		for _, p := range r.pgbench {
			total += p.TPS * p.DurationS
		}
		return total
	}
	for _, s := range servers {
		if name == "append-"+s {
			if a, ok := r.append[s]; ok {
				return a.AppendsPerSec * (a.DurationS + a.WarmupS)
			}
		}
	}
	return 0
}
