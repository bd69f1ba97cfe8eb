package api

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/lifecycle"
)

// outage turns a database outage into three log lines instead of one per request: when
// the first request finds Postgres unreachable, a reminder every 30 s while it lasts,
// and when a probe finds it back (with how long it was gone and how many requests got
// a 503 meanwhile).
type outage struct {
	log   *zap.Logger
	ping  func(context.Context) error
	live  context.Context // ends the probe at shutdown
	probe time.Duration
	spawn func(func()) // runs the probe as a tracked goroutine of the server

	mu      sync.Mutex
	down    bool
	since   time.Time
	refused int64
}

const outageReminder = 30 * time.Second

func newOutage(log *zap.Logger, live context.Context, ping func(context.Context) error, spawn func(func())) *outage {
	return &outage{log: log, ping: ping, live: live, probe: 250 * time.Millisecond, spawn: spawn}
}

// failed records a request that found the database unreachable.
func (o *outage) failed(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.refused++
	if o.down {
		return
	}
	o.down, o.since = true, time.Now()
	o.log.Error("database unavailable: answering 503 with Retry-After until it is back", zap.Error(err))
	o.spawn(o.watch)
}

// watch probes the database every probe interval until it answers, then ends the
// outage.
func (o *outage) watch() {
	watching, over := context.WithCancel(o.live)
	defer over()
	lastReminder := time.Now()
	probe := func(context.Context) {
		ctx, cancel := context.WithTimeout(o.live, 2*time.Second)
		err := o.ping(ctx)
		cancel()
		o.mu.Lock()
		defer o.mu.Unlock()
		if err == nil {
			o.down = false
			o.log.Info("database available again", zap.Duration("outage", time.Since(o.since)),
				zap.Int64("requests_answered_503", o.refused))
			o.refused = 0
			over()
			return
		}
		if time.Since(lastReminder) >= outageReminder {
			lastReminder = time.Now()
			o.log.Warn("database still unavailable", zap.Duration("for", time.Since(o.since)),
				zap.Int64("requests_answered_503", o.refused), zap.Error(err))
		}
	}
	(&lifecycle.Every{Interval: o.probe, Run: probe}).Until(watching)
}

// Down reports whether an outage is in progress (for tests and health).
func (o *outage) Down() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.down
}
