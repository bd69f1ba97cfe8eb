package lifecycle

import (
	"context"
	"sync"
	"time"

	"github.com/entityd/entityd/internal/clock"
)

// Every is a Service that does a round of work periodically on a clock until Stop: a
// round each Interval, one more at once when poked, never two at the same time. Every
// periodic loop of entityd runs as one, so that a test that runs the server on a
// clock.Test moves them all by advancing the clock instead of sleeping.
type Every struct {
	// Interval is the time between rounds (with RunNext: the longest).
	Interval time.Duration
	// Clock keeps the time of the rounds; nil is the wall clock.
	Clock clock.Clock
	// RunAtStart does a round right after Start instead of an Interval later.
	RunAtStart bool
	// Run is one round. Rounds keep to a grid, as a time.Ticker's ticks do: a round that
	// overruns the next tick is followed by one at once, and the ticks it missed are
	// dropped. Poked rounds do not move the grid.
	Run func(ctx context.Context)
	// RunNext, in place of Run, is a round that returns how soon the next is due (at
	// most Interval): a loop that sleeps until its next piece of work comes due.
	RunNext func(ctx context.Context) time.Duration

	pokeOnce sync.Once
	pokes    chan struct{}
	loop     Loop
}

// Poke asks for a round now (or right after the one under way). Pokes that come while
// one is pending are one poke.
func (e *Every) Poke() {
	select {
	case e.pokeCh() <- struct{}{}:
	default:
	}
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

func (e *Every) first() time.Time {
	now := clock.Or(e.Clock).Now()
	if e.RunAtStart {
		return now
	}
	return now.Add(e.Interval)
}

func (e *Every) pokeCh() chan struct{} {
	e.pokeOnce.Do(func() { e.pokes = make(chan struct{}, 1) })
	return e.pokes
}

func (e *Every) run(ctx context.Context, next time.Time) {
	if (e.Run == nil) == (e.RunNext == nil) {
		panic("lifecycle: Every needs one of Run and RunNext")
	}
	clk, pokes := clock.Or(e.Clock), e.pokeCh()
	for {
		t := clk.TimerAt(next)
		ticked := false
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-pokes:
			t.Stop()
		case <-t.C:
			ticked = true
		}
		if e.RunNext != nil {
			wait := min(e.RunNext(ctx), e.Interval)
			next = clk.Now().Add(wait)
			continue
		}
		e.Run(ctx)
		if ticked {
			next = next.Add(e.Interval)
			if now := clk.Now(); next.Before(now) {
				next = now
			}
		}
	}
}
