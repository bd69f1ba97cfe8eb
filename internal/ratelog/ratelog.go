// Package ratelog keeps a failure that repeats (the database is down, a hostile client
// sends the same bad input a thousand times a second) from flooding the log: one line per
// interval, and the next line says how many were held back.
package ratelog

import (
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// DefaultEvery is the interval of a zero Limiter.
const DefaultEvery = 5 * time.Second

// Limiter logs at most one line per Every for one kind of event. The zero value is
// ready to use.
type Limiter struct {
	Every time.Duration

	mu   sync.Mutex
	last time.Time
	held int
}

// Log writes msg at lvl unless a line was written less than Every ago; a written line
// carries "suppressed", the number of lines held back since the previous one.
func (l *Limiter) Log(log *zap.Logger, lvl zapcore.Level, msg string, fields ...zap.Field) {
	every := l.Every
	if every <= 0 {
		every = DefaultEvery
	}
	l.mu.Lock()
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < every {
		l.held++
		l.mu.Unlock()
		return
	}
	held := l.held
	l.last, l.held = now, 0
	l.mu.Unlock()
	if ce := log.Check(lvl, msg); ce != nil {
		if held > 0 {
			fields = append(fields, zap.Int("suppressed", held))
		}
		ce.Write(fields...)
	}
}
