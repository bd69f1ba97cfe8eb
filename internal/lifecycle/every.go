package lifecycle

import (
	"context"
	"sync"
	"time"

	"github.com/entityd/entityd/internal/clock"
)

// Every is a Service that does a round of work periodically on a clock until Stop: a
// round each Interval, one more at once when woken, never two at the same time. Every
// periodic loop of entityd runs as one, so that a test that runs the server on a
// clock.Test moves them all by advancing the clock instead of sleeping.
type Every struct {
	// Interval is the time between rounds (with RunNext: the longest).
	Interval time.Duration
	// Clock keeps the time of the rounds; nil is the wall clock.
	Clock clock.Clock
	// RunAtStart does a round right after Start instead of an Interval later.
	RunAtStart bool
	// Wake, when set, asks for a round at once with each receive: the service pokes the
	// loop with a non-blocking send on a channel of capacity one, so pokes that come
	// while one is pending are one poke.
	Wake <-chan struct{}
	// Run is one round. Rounds keep to a grid, as a time.Ticker's ticks do, except that a
	// round that overruns the next tick (or a clock that jumped past several) moves the
	// grid to an Interval after the round: missed ticks are dropped, not made up back to
	// back. Rounds on Wake do not move the grid.
	Run func(ctx context.Context)
	// RunNext, in place of Run, is a round that returns when the next is due, for a loop
	// that sleeps until its next piece of work comes due; the next round comes Interval
	// after this one began at the latest (the zero time: then). A time, not a duration:
	// a time the round read from the database stays right when the clock moved meanwhile.
	RunNext func(ctx context.Context) time.Time

	loop Loop
}

// Start runs the rounds in a goroutine until Stop. The first round's time is fixed here,
// so a test clock moved right after Start still reaches it.
func (e *Every) Start(ctx context.Context) error {
	first := e.first()
	e.loop.Run = func(ctx context.Context) { e.run(ctx, first) }
	return e.loop.Start(ctx)
}

// Stop ends the rounds and waits for the one under way (or for ctx).
func (e *Every) Stop(ctx context.Context) { e.loop.Stop(ctx) }

// Until does the rounds in the calling goroutine until ctx ends: a loop that lives as
// long as a request or a wake rather than the server.
func (e *Every) Until(ctx context.Context) { e.run(ctx, e.first()) }

// Go does the rounds in a goroutine counted by wg until ctx ends, for a service that
// keeps its goroutines in a WaitGroup. Like Start, it fixes the first round's time
// before it returns.
func (e *Every) Go(ctx context.Context, wg *sync.WaitGroup) {
	first := e.first()
	wg.Add(1)
	go func() { defer wg.Done(); e.run(ctx, first) }()
}

func (e *Every) first() time.Time {
	now := clock.Or(e.Clock).Now()
	if e.RunAtStart {
		return now
	}
	return now.Add(e.Interval)
}

func (e *Every) run(ctx context.Context, next time.Time) {
	if (e.Run == nil) == (e.RunNext == nil) {
		panic("lifecycle: Every needs one of Run and RunNext")
	}
	clk := clock.Or(e.Clock)
	for {
		t := clk.TimerAt(next)
		ticked := false
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-e.Wake:
			t.Stop()
		case <-t.C:
			ticked = true
		}
		if e.RunNext != nil {
			latest := clk.Now().Add(e.Interval)
			next = e.RunNext(ctx)
			if next.IsZero() || next.After(latest) {
				next = latest
			}
			continue
		}
		e.Run(ctx)
		if ticked {
			next = next.Add(e.Interval)
			if now := clk.Now(); next.Before(now) {
				next = now.Add(e.Interval)
			}
		}
	}
}
