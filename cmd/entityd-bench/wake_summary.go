package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// wake-summary reads the wake-<mode>.json files of bench/wake.sh (rep*/) and prints a
// markdown summary: one table per mode, a row per metric, a column per repetition, and
// the median with (min–max).

type wakeMetric struct {
	name string
	get  func(r *WakeResult) (float64, bool)
	fmt  string
}

func wm(name, format string, get func(r *WakeResult) float64) wakeMetric {
	return wakeMetric{name: name, fmt: format, get: func(r *WakeResult) (float64, bool) { return get(r), true }}
}

func wmCPU(name, format string, get func(c *WakeCPU) float64) wakeMetric {
	return wakeMetric{name: name, fmt: format, get: func(r *WakeResult) (float64, bool) {
		if r.CPU == nil {
			return 0, false
		}
		return get(r.CPU), true
	}}
}

func wmPG(name, format string, get func(p *WakePGCounters) float64) wakeMetric {
	return wakeMetric{name: name, fmt: format, get: func(r *WakeResult) (float64, bool) {
		if r.Postgres == nil {
			return 0, false
		}
		return get(r.Postgres), true
	}}
}

func boolNum(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

var wakeCommonMetrics = []wakeMetric{
	wm("send → response p50 (ms)", "%.2f", func(r *WakeResult) float64 { return r.Latency.SendToResponse.P50Ms }),
	wm("send → response p99 (ms)", "%.2f", func(r *WakeResult) float64 { return r.Latency.SendToResponse.P99Ms }),
	wm("response → handler start p50 (ms)", "%.2f", func(r *WakeResult) float64 { return r.Latency.ResponseToStart.P50Ms }),
	wm("response → handler start p99 (ms)", "%.2f", func(r *WakeResult) float64 { return r.Latency.ResponseToStart.P99Ms }),
	wm("messages checked (warm-up included)", "%.0f", func(r *WakeResult) float64 { return float64(r.Delivery.Expected) }),
	wm("missing + duplicate + out of order", "%.0f", func(r *WakeResult) float64 {
		d := r.Delivery
		return float64(d.Missing + d.Duplicates + d.Unexpected + d.WrongEntity + d.OutOfOrder)
	}),
	wm("entities whose scanned_seq lags", "%.0f", func(r *WakeResult) float64 {
		if r.Verify == nil {
			return -1
		}
		return float64(r.Verify.Behind)
	}),
	wmCPU("CPU busy, % of 2 cores", "%.0f", func(c *WakeCPU) float64 { return c.BusyPct }),
	wmCPU("… server (entityd + handler) %", "%.0f", func(c *WakeCPU) float64 { return c.ServerPct }),
	wmCPU("… PostgreSQL %", "%.0f", func(c *WakeCPU) float64 { return c.PostgresPct }),
	wmCPU("… load generator %", "%.0f", func(c *WakeCPU) float64 { return c.LoadgenPct }),
	wmCPU("… other processes %", "%.0f", func(c *WakeCPU) float64 { return c.OtherPct }),
	wmCPU("server CPU per message (µs)", "%.0f", func(c *WakeCPU) float64 { return c.ServerUsPerMsg }),
	wmCPU("PostgreSQL CPU per message (µs)", "%.0f", func(c *WakeCPU) float64 { return c.PGUsPerMsg }),
	wmCPU("load generator CPU per message (µs)", "%.0f", func(c *WakeCPU) float64 { return c.LoadUsPerMsg }),
	wm("group commits per message", "%.3f", func(r *WakeResult) float64 { return r.Commits.CommitsPerMessage }),
	wm("appends per group commit", "%.1f", func(r *WakeResult) float64 { return r.Commits.AppendsPerCommit }),
	wm("mean group-commit transaction (ms)", "%.2f", func(r *WakeResult) float64 { return r.Commits.MeanCommitMs }),
	wmPG("PostgreSQL transactions per message", "%.3f", func(p *WakePGCounters) float64 { return p.Database["xact_commit"] }),
	wmPG("WAL fsyncs per message", "%.3f", func(p *WakePGCounters) float64 { return p.WAL["wal_sync"] }),
	wmPG("WAL bytes per message", "%.0f", func(p *WakePGCounters) float64 { return p.WAL["wal_bytes"] }),
	wmPG("rows read by seq scans per message", "%.0f", func(p *WakePGCounters) float64 {
		var s float64
		for _, t := range p.Tables {
			s += t["seq_tup_read"]
		}
		return s
	}),
}

var wakeLatencyMetrics = append([]wakeMetric{
	wm("sends/s in window", "%.0f", func(r *WakeResult) float64 { return r.Sends.PerSecWindow }),
	wm("send → handler start p50 (ms)", "%.2f", func(r *WakeResult) float64 { return r.Latency.SendToStart.P50Ms }),
	wm("send → handler start p90 (ms)", "%.2f", func(r *WakeResult) float64 { return r.Latency.SendToStart.P90Ms }),
	wm("send → handler start p99 (ms)", "%.2f", func(r *WakeResult) float64 { return r.Latency.SendToStart.P99Ms }),
	wm("send → handler start max (ms)", "%.1f", func(r *WakeResult) float64 { return r.Latency.SendToStart.MaxMs }),
	{name: "due → handler start p99 (ms)", fmt: "%.2f", get: func(r *WakeResult) (float64, bool) {
		if r.Latency.SchedToStart == nil {
			return 0, false
		}
		return r.Latency.SchedToStart.P99Ms, true
	}},
	{name: "load generator lag p99 (ms)", fmt: "%.2f", get: func(r *WakeResult) (float64, bool) {
		if r.Latency.SchedLag == nil {
			return 0, false
		}
		return r.Latency.SchedLag.P99Ms, true
	}},
}, wakeCommonMetrics...)

var wakeThroughputMetrics = append([]wakeMetric{
	wm("sends/s in window", "%.0f", func(r *WakeResult) float64 { return r.Sends.PerSecWindow }),
	wm("handled/s in window", "%.0f", func(r *WakeResult) float64 { return r.Throughput.HandledPerSec }),
	wm("acknowledged/s in window (lower bound)", "%.0f", func(r *WakeResult) float64 { return r.Throughput.AckedPerSec }),
	wm("sustained end to end (msgs/s)", "%.0f", func(r *WakeResult) float64 { return r.Throughput.SustainedPerSec }),
	wm("backlog at end of window (msgs)", "%.0f", func(r *WakeResult) float64 { return float64(r.Throughput.BacklogAtEnd) }),
	wm("drain after last response (s)", "%.3f", func(r *WakeResult) float64 { return r.Throughput.DrainS }),
	wm("send → handler start p50 (ms)", "%.2f", func(r *WakeResult) float64 { return r.Latency.SendToStart.P50Ms }),
	wm("send → handler start p99 (ms)", "%.2f", func(r *WakeResult) float64 { return r.Latency.SendToStart.P99Ms }),
	wm("handler return → next start p50 (ms)", "%.2f", func(r *WakeResult) float64 { return r.Latency.AckToNext.P50Ms }),
}, wakeCommonMetrics...)

func runWakeSummary(args []string) error {
	fs := flag.NewFlagSet("wake-summary", flag.ExitOnError)
	dir := fs.String("dir", "", "results directory of bench/wake.sh")
	_ = fs.Parse(args)
	if *dir == "" {
		return errors.New("wake-summary: -dir is required")
	}
	return wakeSummary(os.Stdout, *dir)
}

func wakeSummary(w io.Writer, dir string) error {
	reps, _ := filepath.Glob(filepath.Join(dir, "rep*"))
	slices.SortFunc(reps, func(a, b string) int {
		var x, y int
		fmt.Sscanf(filepath.Base(a), "rep%d", &x)
		fmt.Sscanf(filepath.Base(b), "rep%d", &y)
		return x - y
	})
	if meta, err := os.ReadFile(filepath.Join(dir, "meta.txt")); err == nil {
		fmt.Fprintf(w, "# Wake benchmark (%s)\n\n```\n%s```\n", filepath.Base(dir), meta)
	}
	for _, mode := range []string{"latency", "throughput"} {
		var results []*WakeResult
		var names []string
		for _, rd := range reps {
			b, err := os.ReadFile(filepath.Join(rd, "wake-"+mode+".json"))
			if err != nil {
				continue
			}
			var r WakeResult
			if err := json.Unmarshal(b, &r); err != nil {
				return fmt.Errorf("%s: %w", rd, err)
			}
			results = append(results, &r)
			names = append(names, filepath.Base(rd))
		}
		if len(results) == 0 {
			continue
		}
		metrics := wakeLatencyMetrics
		r0 := results[0]
		if mode == "latency" {
			fmt.Fprintf(w, "\n## latency: %.0f sends/s (%s arrivals) over %d entities, %gs window after %gs warm-up\n\n",
				r0.RatePerSec, r0.Arrivals, r0.Entities, r0.DurationS, r0.WarmupS)
		} else {
			metrics = wakeThroughputMetrics
			fmt.Fprintf(w, "\n## throughput: %d closed-loop senders over %d entities, %gs window after %gs warm-up\n\n",
				r0.Concurrency, r0.Entities, r0.DurationS, r0.WarmupS)
		}
		fmt.Fprintf(w, "| metric | %s | median (min–max) |\n|---|%s---:|\n", strings.Join(names, " | "), strings.Repeat("---:|", len(names)))
		for _, m := range metrics {
			var vals []float64
			cells := make([]string, len(results))
			for i, r := range results {
				v, ok := m.get(r)
				if !ok {
					cells[i] = "–"
					continue
				}
				vals = append(vals, v)
				cells[i] = fmt.Sprintf(m.fmt, v)
			}
			agg := "–"
			if len(vals) > 0 {
				s := slices.Clone(vals)
				slices.Sort(s)
				agg = fmt.Sprintf(m.fmt+" ("+m.fmt+"–"+m.fmt+")", wakeMedian(s), s[0], s[len(s)-1])
			}
			fmt.Fprintf(w, "| %s | %s | %s |\n", m.name, strings.Join(cells, " | "), agg)
		}
		passes := 0
		for _, r := range results {
			if r.Pass != nil && r.Pass.Pass {
				passes++
			}
		}
		if r0.Pass != nil {
			fmt.Fprintf(w, "\nTarget: %s — met in %d of %d repetitions.\n", r0.Pass.Target, passes, len(results))
		}
	}
	return nil
}

// wakeMedian is the median of sorted values (the mean of the middle two for an even count).
func wakeMedian(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
