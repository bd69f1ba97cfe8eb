// Package lifecycle gives every long-running part of entityd one shape — Start, then
// Stop — and stops them in the reverse order of their start, so that nothing runs after
// what it depends on has stopped and no goroutine outlives the server.
package lifecycle

import (
	"context"
	"sync"
)

// Service is a part that runs in the background between Start and Stop. Start returns
// once the service runs (or failed to start); Stop returns once everything it started
// has ended, or ctx is done.
type Service interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context)
}

// Group starts services one after the other and stops them in reverse order.
type Group struct {
	mu      sync.Mutex
	started []Service
}

// Start starts s and remembers it for Stop. A service that fails to start is not
// remembered (it has nothing to stop).
func (g *Group) Start(ctx context.Context, s Service) error {
	if err := s.Start(ctx); err != nil {
		return err
	}
	g.mu.Lock()
	g.started = append(g.started, s)
	g.mu.Unlock()
	return nil
}

// Stop stops every started service, the last started first. It is safe to call more
// than once: a stopped service is not stopped again.
func (g *Group) Stop(ctx context.Context) {
	g.mu.Lock()
	started := g.started
	g.started = nil
	g.mu.Unlock()
	for i := len(started) - 1; i >= 0; i-- {
		started[i].Stop(ctx)
	}
}

// Loop is a Service that runs one blocking function until Stop cancels its context.
type Loop struct {
	Run func(ctx context.Context)

	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs l.Run in a goroutine with a context that only Stop cancels.
func (l *Loop) Start(ctx context.Context) error {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.cancel, l.done = cancel, make(chan struct{})
	go func() { defer close(l.done); l.Run(runCtx) }()
	return nil
}

// Stop cancels the loop and waits for it to return (or for ctx).
func (l *Loop) Stop(ctx context.Context) {
	l.cancel()
	select {
	case <-l.done:
	case <-ctx.Done():
	}
}

// Funcs adapts a start and a stop function into a Service.
type Funcs struct {
	OnStart func(ctx context.Context) error
	OnStop  func(ctx context.Context)
}

func (f Funcs) Start(ctx context.Context) error {
	if f.OnStart == nil {
		return nil
	}
	return f.OnStart(ctx)
}

func (f Funcs) Stop(ctx context.Context) {
	if f.OnStop != nil {
		f.OnStop(ctx)
	}
}
