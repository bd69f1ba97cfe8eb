package metrics

import (
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

var (
	pools   = map[*pgxpool.Pool]struct{}{}
	poolsMu sync.Mutex

	poolConns = prometheus.NewDesc("entityd_db_pool_connections",
		"PostgreSQL pool connections by state (acquired, idle) and the configured maximum (max).", []string{"state"}, nil)
	poolAcquires = prometheus.NewDesc("entityd_db_pool_acquires_total",
		"Connections acquired from the PostgreSQL pool.", nil, nil)
	poolWaits = prometheus.NewDesc("entityd_db_pool_acquire_waits_total",
		"Acquisitions that had to wait for a connection (a saturated pool).", nil, nil)
	poolWaitSeconds = prometheus.NewDesc("entityd_db_pool_acquire_wait_seconds_total",
		"Time spent waiting for a pool connection.", nil, nil)
)

// TrackPool reports pool's statistics until the returned function is called.
func TrackPool(pool *pgxpool.Pool) (untrack func()) {
	poolsMu.Lock()
	pools[pool] = struct{}{}
	poolsMu.Unlock()
	return func() {
		poolsMu.Lock()
		delete(pools, pool)
		poolsMu.Unlock()
	}
}

// poolCollector sums the statistics of the tracked pools at scrape time.
type poolCollector struct{}

func (poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- poolConns
	ch <- poolAcquires
	ch <- poolWaits
	ch <- poolWaitSeconds
}

func (poolCollector) Collect(ch chan<- prometheus.Metric) {
	var acquired, idle, max, acquires, waits int64
	var waited float64
	poolsMu.Lock()
	for p := range pools {
		s := p.Stat()
		acquired += int64(s.AcquiredConns())
		idle += int64(s.IdleConns())
		max += int64(s.MaxConns())
		acquires += s.AcquireCount()
		waits += s.EmptyAcquireCount()
		waited += s.AcquireDuration().Seconds()
	}
	poolsMu.Unlock()
	ch <- prometheus.MustNewConstMetric(poolConns, prometheus.GaugeValue, float64(acquired), "acquired")
	ch <- prometheus.MustNewConstMetric(poolConns, prometheus.GaugeValue, float64(idle), "idle")
	ch <- prometheus.MustNewConstMetric(poolConns, prometheus.GaugeValue, float64(max), "max")
	ch <- prometheus.MustNewConstMetric(poolAcquires, prometheus.CounterValue, float64(acquires))
	ch <- prometheus.MustNewConstMetric(poolWaits, prometheus.CounterValue, float64(waits))
	ch <- prometheus.MustNewConstMetric(poolWaitSeconds, prometheus.CounterValue, waited)
}
