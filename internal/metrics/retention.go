package metrics

import "github.com/prometheus/client_golang/prometheus"

// RetentionPurged counts rows the retention janitor deleted, by table.
var RetentionPurged = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "entityd_retention_purged_total",
	Help: "Rows deleted by the retention janitor (expired idempotency keys, finished delayed sends, old wake failures), by table.",
}, []string{"table"})

func init() { Registry.MustRegister(RetentionPurged) }
