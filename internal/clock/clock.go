// Package clock is the time the services see. A server runs on the wall clock, and its
// SQL decides with the database's own now() — one clock for every replica, whatever the
// machines' clocks say. A test runs a service on a Test clock instead, which stands still
// until the test moves it: a lease lapses, a TTL ends, a timer or a delayed send comes
// due and a retry delay passes when the test advances the clock, not after a sleep.
//
// A query whose decision tests must control takes the time as a parameter and reads it
// as coalesce($n::timestamptz, now()); the parameter is Clock.SQL(), nil on the wall
// clock, so production SQL is what it was.
package clock

import (
	"context"
	"time"
)

// Clock tells a service the time and wakes it when a time comes.
type Clock interface {
	// Now is the current time.
	Now() time.Time
	// SQL is the value for a query's now parameter (read as coalesce($n, now())): nil
	// on the wall clock, so the database's clock decides; the clock's time otherwise.
	SQL() *time.Time
	// TimerAt returns a timer that fires once the clock reaches at (at once when it
	// has). A deadline, not a duration: a Test clock moved before the timer is made
	// still fires it.
	TimerAt(at time.Time) *Timer
}

// Timer fires once, on C, with the clock's time.
type Timer struct {
	C    <-chan time.Time
	stop func() bool
}

// Stop releases the timer; it reports whether the timer had not fired yet.
func (t *Timer) Stop() bool { return t.stop() }

// Wall is the real clock.
var Wall Clock = wall{}

type wall struct{}

func (wall) Now() time.Time  { return time.Now() }
func (wall) SQL() *time.Time { return nil }
func (wall) TimerAt(at time.Time) *Timer {
	t := time.NewTimer(time.Until(at))
	return &Timer{C: t.C, stop: t.Stop}
}

// Or is c, or the wall clock when c is nil (an option left unset).
func Or(c Clock) Clock {
	if c == nil {
		return Wall
	}
	return c
}

// After returns a timer that fires once d of c's time has passed.
func After(c Clock, d time.Duration) *Timer { return c.TimerAt(c.Now().Add(d)) }

// Sleep waits until d of c's time has passed; it reports false when ctx ended first.
func Sleep(ctx context.Context, c Clock, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := After(c, d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Until is how long from c's now until at.
func Until(c Clock, at time.Time) time.Duration { return at.Sub(c.Now()) }
