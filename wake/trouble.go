package wake

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/entityd/entityd/internal/clock"
	"github.com/entityd/entityd/internal/dberr"
	"github.com/entityd/entityd/internal/ratelog"
	"github.com/entityd/entityd/wire"
)

// troubleBackoff bounds the pause after a failure that is not the handler's (the
// database went away, a read failed): 1 s doubling to 30 s. Attempts are not consumed:
// an outage must not mark good work failed.
const (
	troubleFirst = time.Second
	troubleMax   = 30 * time.Second
)

// loopLogs rate-limit the warnings of loops that fail on every tick while the database
// is away: one line per kind of failure per interval, with the count held back.
type loopLogs struct {
	heartbeat, resolve, claim, sweep, timers, load, delivery, progress, release ratelog.Limiter
}

func (d *Dispatcher) warn(l *ratelog.Limiter, msg string, fields ...zap.Field) {
	l.Log(d.log, zapcore.WarnLevel, msg, fields...)
}

// errRefusedWrites wraps the database's refusal of what a handler run wrote: the run
// counts as a failed attempt (retried, then given up on) instead of being retried for
// ever as if the database were away.
type errRefusedWrites struct{ err error }

func (e errRefusedWrites) Error() string {
	return "the database refused what the handler wrote: " + e.err.Error()
}
func (e errRefusedWrites) Unwrap() error { return e.err }

// recoverFrom handles a failure of the worker's own machinery (not of the handler): it logs
// (rate-limited), records the reason on the entity so its wake status shows it (unless
// the database itself is away), waits a growing delay and reloads. It reports whether
// the worker may go on.
func (w *worker) recoverFrom(ctx context.Context, cause error) bool {
	for {
		switch {
		case ctx.Err() != nil:
			return false
		case errors.Is(cause, ErrFenced):
			w.log.Info("entity claimed by another process; stopping delivery here")
			return false
		case errors.Is(cause, ErrEntityEnded):
			w.releaseQuietly(ctx)
			return false
		}
		if w.trouble == 0 {
			w.trouble = troubleFirst
		} else {
			w.trouble = min(w.trouble*2, troubleMax)
		}
		w.d.warn(&w.d.logs.delivery, "delivery interrupted; retrying", zap.String("entity", w.url),
			zap.Duration("retry_in", w.trouble), zap.Bool("database_unavailable", dberr.Unavailable(cause)), zap.Error(cause))
		if !dberr.Unavailable(cause) {
			w.noteError(ctx, cause)
		}
		if !clock.Sleep(ctx, w.d.clock, w.trouble) {
			return false
		}
		if cause = w.load(ctx); cause == nil {
			return true
		}
	}
}

// noteError records why delivery of the entity is stuck in entity_wake.last_error, so
// GET .../wake shows it. Best effort: the failure it reports may prevent it too.
func (w *worker) noteError(ctx context.Context, cause error) {
	_, err := w.d.pool.Exec(context.WithoutCancel(ctx), sqlNoteError, w.url, w.fence.holder, w.fence.epoch,
		wire.StorableError(fmt.Errorf("delivery interrupted: %w", cause)))
	if err != nil && ctx.Err() == nil {
		w.d.warn(&w.d.logs.progress, "could not record a delivery error", zap.String("entity", w.url), zap.Error(err))
	}
}
