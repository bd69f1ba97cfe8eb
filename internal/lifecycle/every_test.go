package lifecycle

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/entityd/entityd/internal/clock"
	"github.com/entityd/entityd/internal/testwait"
)

// rounds counts an Every's rounds on a test clock and tells the test of each.
type rounds struct {
	n    atomic.Int32
	done chan int32
}

func newRounds() *rounds { return &rounds{done: make(chan int32, 16)} }

func (r *rounds) round(context.Context) { r.done <- r.n.Add(1) }

func (r *rounds) expect(t *testing.T, n int32, what string) {
	t.Helper()
	if got := testwait.Recv(t, r.done, what); got != n {
		t.Fatalf("%s: round %d, want %d", what, got, n)
	}
}

func (r *rounds) none(t *testing.T, c *clock.Test, what string) {
	t.Helper()
	// the loop is asleep on the clock: nothing can come without moving it
	testwait.Until(t, "the loop waits on the clock", func() bool { return c.Waiting() == 1 })
	select {
	case n := <-r.done:
		t.Fatalf("%s: round %d came", what, n)
	default:
	}
}

func TestEveryTicksWithItsClockAndStops(t *testing.T) {
	c := clock.NewTest(time.Now())
	r := newRounds()
	wake := make(chan struct{}, 1)
	e := &Every{Interval: time.Minute, Clock: c, Run: r.round, Wake: wake}
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.none(t, c, "before the first interval")
	c.Advance(59 * time.Second)
	r.none(t, c, "before the interval ends")
	c.Advance(time.Second)
	r.expect(t, 1, "at the first interval")
	r.none(t, c, "between ticks")
	c.Advance(time.Minute)
	r.expect(t, 2, "at the second interval")
	// the round has sent its number but the loop may not have set its next timer yet:
	// a jump before it does would be measured from the new time
	r.none(t, c, "after the second round")

	// a jump over several ticks is one round, and the grid starts again after it
	c.Advance(5*time.Minute + 30*time.Second)
	r.expect(t, 3, "the late tick")
	r.none(t, c, "the skipped ticks")
	c.Advance(59 * time.Second)
	r.none(t, c, "before an Interval after the late round")
	c.Advance(time.Second)
	r.expect(t, 4, "an Interval after the late round")

	wake <- struct{}{}
	r.expect(t, 5, "a wake-up")
	c.Advance(time.Minute)
	r.expect(t, 6, "the grid is where it was")

	e.Stop(context.Background())
	if c.Waiting() != 0 {
		t.Fatal("Stop left a timer on the clock")
	}
}

func TestEveryRunAtStartAndRunNext(t *testing.T) {
	c := clock.NewTest(time.Now())
	r := newRounds()
	due := c.Now().Add(100 * time.Millisecond) // sooner than the Interval
	e := &Every{Interval: time.Second, Clock: c, RunAtStart: true, RunNext: func(ctx context.Context) time.Time {
		r.round(ctx)
		if r.n.Load() == 1 {
			return due
		}
		return time.Time{} // nothing due: an Interval later
	}}
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer e.Stop(context.Background())
	r.expect(t, 1, "at start")
	r.none(t, c, "before the next is due")
	c.Set(due)
	r.expect(t, 2, "when the round said")
	r.none(t, c, "before an Interval passed")
	c.Advance(time.Second)
	r.expect(t, 3, "an Interval after the round")
}

// Until is the same loop in the caller's goroutine, for one with a shorter life.
func TestEveryUntilEndsWithItsContext(t *testing.T) {
	c := clock.NewTest(time.Now())
	r := newRounds()
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	go func() { (&Every{Interval: time.Second, Clock: c, Run: r.round}).Until(ctx); close(ended) }()
	testwait.Until(t, "the loop waits on the clock", func() bool { return c.Waiting() == 1 })
	c.Advance(time.Second)
	r.expect(t, 1, "a tick")
	cancel()
	testwait.Closed(t, ended, "Until returns when its context ends")
}
