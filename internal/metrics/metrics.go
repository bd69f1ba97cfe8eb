// Package metrics holds entityd's Prometheus metrics, served at GET /_electric/metrics
// (and on --debug-addr). Metrics are process-wide: a process that runs several servers
// (tests do) adds their numbers up.
package metrics

import (
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Registry holds every entityd metric plus the Go runtime and process collectors.
var Registry = prometheus.NewRegistry()

// Latency buckets from 100 µs to 30 s: a send is ~1 ms, a long-poll up to its timeout.
var latencyBuckets = prometheus.ExponentialBuckets(0.0001, 2.5, 14)

var (
	// HTTPRequests counts answered requests by method, route pattern, status code and
	// live mode ("" for ordinary requests, long-poll or sse for live reads).
	HTTPRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "entityd_http_requests_total", Help: "HTTP requests answered, by method, route, status code and live mode.",
	}, []string{"method", "route", "code", "live"})
	// HTTPDuration is the time from request to the end of the response.
	HTTPDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "entityd_http_request_duration_seconds", Help: "HTTP request duration, by method, route and live mode.",
		Buckets: latencyBuckets,
	}, []string{"method", "route", "live"})

	// Appends counts append requests committed through the group-commit lanes.
	Appends = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "entityd_stream_appends_total", Help: "Append requests committed by the group-commit lanes.",
	})
	// CommitBatch is the number of append requests per group-commit transaction.
	CommitBatch = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "entityd_stream_commit_batch_size", Help: "Append requests per group-commit transaction.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 10),
	})
	// CommitDuration is the time of one group-commit transaction, WAL flush included.
	CommitDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "entityd_stream_commit_duration_seconds", Help: "Group-commit transaction duration (WAL flush included).",
		Buckets: latencyBuckets,
	})
	// CommitFailures counts group-commit transactions that failed (every request in them failed).
	CommitFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "entityd_stream_commit_failures_total", Help: "Group-commit transactions that failed.",
	})

	// HandlerRuns counts handler runs by entity type and result (ok, error).
	HandlerRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "entityd_handler_runs_total", Help: "Entity handler runs, by entity type and result (ok, error).",
	}, []string{"entity_type", "result"})
	// HandlerDuration is the time a handler ran (its acknowledgement excluded).
	HandlerDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "entityd_handler_duration_seconds", Help: "Entity handler run duration, by entity type.",
		Buckets: latencyBuckets,
	}, []string{"entity_type"})
	// WakesFailed counts units of work given up after the last attempt (poison messages).
	WakesFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "entityd_wakes_failed_total", Help: "Units of work marked failed after the last attempt, by entity type.",
	}, []string{"entity_type"})
	// WakesFenced counts claims this process found taken by another process when it
	// came to acknowledge (the run's writes were refused; the other holder delivers).
	WakesFenced = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "entityd_wakes_fenced_total", Help: "Acknowledgements refused because another process had claimed the entity, by entity type.",
	}, []string{"entity_type"})

	// LongPollsWaiting is the number of live=long-poll reads waiting for data now.
	LongPollsWaiting = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "entityd_long_polls_waiting", Help: "Long-poll reads waiting for an append.",
	})

	// DelayedFired counts delayed sends appended when due; DelayedDropped those that could
	// no longer be appended (kept in delayed_sends with last_error).
	DelayedFired = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "entityd_delayed_sends_fired_total", Help: "Delayed sends appended when due.",
	})
	DelayedDropped = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "entityd_delayed_sends_dropped_total", Help: "Delayed sends that could not be appended when due.",
	})
)

func init() {
	Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		HTTPRequests, HTTPDuration, Appends, CommitBatch, CommitDuration, CommitFailures,
		HandlerRuns, HandlerDuration, WakesFailed, WakesFenced, LongPollsWaiting, DelayedFired, DelayedDropped,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "entityd_sse_parked_subscribers", Help: "Idle SSE subscribers parked in per-stream hubs.",
		}, func() float64 { return float64(parked.sum()) }),
		poolCollector{},
	)
}

// Handler serves the metrics in the Prometheus text format.
func Handler() http.Handler {
	return promhttp.HandlerFor(Registry, promhttp.HandlerOpts{})
}

// sources is a set of functions whose values are summed into one gauge.
type sources struct {
	mu    sync.Mutex
	next  int
	funcs map[int]func() int
}

func (s *sources) add(f func() int) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.funcs == nil {
		s.funcs = map[int]func() int{}
	}
	id := s.next
	s.next++
	s.funcs[id] = f
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.funcs, id)
	}
}

func (s *sources) sum() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, f := range s.funcs {
		n += f()
	}
	return n
}

var parked sources

// TrackParked adds a server's count of parked SSE subscribers to the gauge until the
// returned function is called.
func TrackParked(count func() int) (untrack func()) { return parked.add(count) }
