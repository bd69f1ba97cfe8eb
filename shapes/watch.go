package shapes

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/entityd/entityd/internal/lifecycle"
)

// watcher tells live readers when new changes became final, with one query per tick
// for the whole process (only while someone waits), whichever process wrote them.
type watcher struct {
	s        *Service
	interval time.Duration

	mu       sync.Mutex
	waiting  int
	changed  chan struct{} // closed when the frontier moves
	frontier string
	wake     chan struct{}
}

func newWatcher(s *Service, interval time.Duration) *watcher {
	return &watcher{s: s, interval: interval, changed: make(chan struct{}), wake: make(chan struct{}, 1)}
}

// wait returns a channel closed at the next move of the frontier; done must be called.
func (w *watcher) wait() (ch <-chan struct{}, done func()) {
	w.mu.Lock()
	w.waiting++
	ch = w.changed
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return ch, func() {
		w.mu.Lock()
		w.waiting--
		w.mu.Unlock()
	}
}

// loop polls the frontier every interval while anyone waits, and at once when a reader
// starts waiting.
func (w *watcher) loop() *lifecycle.Every {
	return &lifecycle.Every{Interval: w.interval, Wake: w.wake, Run: w.poll}
}

func (w *watcher) poll(ctx context.Context) {
	w.mu.Lock()
	idle := w.waiting == 0
	w.mu.Unlock()
	if idle {
		return
	}
	var frontier string
	if err := w.s.db.QueryRow(ctx, sqlFrontier).Scan(&frontier); err != nil {
		if ctx.Err() == nil {
			w.s.logs.Log(w.s.log, zapcore.WarnLevel, "could not read the shape log frontier", zap.Error(err))
		}
		return
	}
	w.mu.Lock()
	if frontier != w.frontier {
		w.frontier = frontier
		close(w.changed)
		w.changed = make(chan struct{})
	}
	w.mu.Unlock()
}
