package server

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/internal/metrics"
	"github.com/entityd/entityd/internal/ratelog"
	"github.com/entityd/entityd/shapes"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wake"
)

// Retention says how long entityd keeps what it only needs for a while. Zero values take
// the defaults.
type Retention struct {
	// DedupeWindow is how long a send key (and any keyed append) is remembered: a retry
	// within it is answered like the first send, a later one is a new message (24h).
	DedupeWindow time.Duration
	// History is how long finished delayed sends (kept with last_error) and the records
	// of wake failures are kept (7 days).
	History time.Duration
	// ShapeLog is how long the changes that Electric shapes follow are kept (24h): a
	// shape client further behind starts again from a snapshot (409 must-refetch).
	ShapeLog time.Duration
	// Interval is how often the janitor runs (5m).
	Interval time.Duration
}

func (r *Retention) setDefaults() {
	if r.DedupeWindow <= 0 {
		r.DedupeWindow = 24 * time.Hour
	}
	if r.History <= 0 {
		r.History = 7 * 24 * time.Hour
	}
	if r.ShapeLog <= 0 {
		r.ShapeLog = 24 * time.Hour
	}
	if r.Interval <= 0 {
		r.Interval = 5 * time.Minute
	}
}

// janitor purges, every Interval, what the retention settings let go. Every server
// process runs one; concurrent purges of the same rows are harmless (small batches, a
// row deleted by one is skipped by the other).
type janitor struct {
	cfg    Retention
	pool   *pgxpool.Pool
	store  *streamdb.Store
	sender *inbox.Sender
	shapes *shapes.Service
	log    *zap.Logger
	failed ratelog.Limiter
}

func (j *janitor) run(ctx context.Context) {
	// A random first delay spreads the replicas of a fleet started together.
	wait := time.Duration(rand.Int64N(int64(j.cfg.Interval)/4 + 1))
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		j.pass(ctx)
		wait = j.cfg.Interval
	}
}

// pass runs every purge once.
func (j *janitor) pass(ctx context.Context) {
	purges := []struct {
		table string
		purge func(context.Context) (int64, error)
	}{
		{"stream_dedupe", func(ctx context.Context) (int64, error) { return j.store.PurgeDedupe(ctx, j.cfg.DedupeWindow) }},
		{"delayed_sends", func(ctx context.Context) (int64, error) { return j.sender.PurgeDelayed(ctx, j.cfg.History) }},
		{"wake_failures", func(ctx context.Context) (int64, error) { return wake.PurgeFailures(ctx, j.pool, j.cfg.History) }},
		{"shape_log", func(ctx context.Context) (int64, error) { return j.shapes.Trim(ctx, j.cfg.ShapeLog) }},
	}
	for _, p := range purges {
		n, err := p.purge(ctx)
		if n > 0 {
			metrics.RetentionPurged.WithLabelValues(p.table).Add(float64(n))
			j.log.Info("retention: purged expired rows", zap.String("table", p.table), zap.Int64("rows", n))
		}
		if err != nil && ctx.Err() == nil {
			j.failed.Log(j.log, zap.WarnLevel, "retention: purge failed; trying again next time", zap.String("table", p.table), zap.Error(err))
		}
	}
}
