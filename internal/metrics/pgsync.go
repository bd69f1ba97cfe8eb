package metrics

import "github.com/prometheus/client_golang/prometheus"

// pgSync observations (package pgsync).
var (
	// PgSyncRetainedWAL is the WAL the replication slot holds back, as the holder of
	// the slot last sampled it (0 when there is no slot).
	PgSyncRetainedWAL = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "entityd_pgsync_slot_retained_wal_bytes",
		Help: "Bytes of WAL the pgSync replication slot holds back (sampled by the process that holds the slot).",
	})
	// PgSyncChanges counts row changes appended to pg-sync streams.
	PgSyncChanges = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "entityd_pgsync_changes_total",
		Help: "Row changes appended to pg-sync streams (one per observing source).",
	})
	// PgSyncInvalidations counts slots Postgres invalidated (max_slot_wal_keep_size hit)
	// that were made again: the changes in between were not delivered.
	PgSyncInvalidations = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "entityd_pgsync_slot_invalidations_total",
		Help: "pgSync slots found invalidated by Postgres (max_slot_wal_keep_size) and made again; changes in between were not delivered.",
	})
	// PgSyncHolding is 1 while this process holds the slot and streams.
	PgSyncHolding = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "entityd_pgsync_holding_slot",
		Help: "1 while this process holds the pgSync replication slot and streams changes.",
	})
)

func init() {
	Registry.MustRegister(PgSyncRetainedWAL, PgSyncChanges, PgSyncInvalidations, PgSyncHolding)
}
