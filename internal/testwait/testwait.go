// Package testwait is how tests wait: for a signal on a channel, or for a condition on
// state the test cannot be told about (a row in Postgres, another process's file). One
// helper, one default bound, and a failure that says what was awaited, so a test never
// sleeps in place of a signal and never hangs past its bound.
package testwait

import (
	"testing"
	"time"
)

// Timeout bounds every wait: long enough for a loaded 2-vCPU CI machine, short enough
// that a lost signal fails the test instead of the whole run's timeout.
const Timeout = 10 * time.Second

// pollEvery paces Until's checks of a condition.
const pollEvery = 10 * time.Millisecond

// Recv returns the next value sent on ch, failing the test if none comes within
// Timeout (or the first of within, when given).
func Recv[T any](t testing.TB, ch <-chan T, what string, within ...time.Duration) T {
	t.Helper()
	timer := time.NewTimer(bound(within))
	defer timer.Stop()
	select {
	case v, ok := <-ch:
		if !ok {
			t.Fatalf("testwait: %s: channel closed", what)
		}
		return v
	case <-timer.C:
		t.Fatalf("testwait: %s: nothing within %s", what, bound(within))
	}
	panic("unreachable")
}

// Closed waits until ch is closed (or receives), failing the test after the bound.
func Closed[T any](t testing.TB, ch <-chan T, what string, within ...time.Duration) {
	t.Helper()
	timer := time.NewTimer(bound(within))
	defer timer.Stop()
	select {
	case <-ch:
	case <-timer.C:
		t.Fatalf("testwait: %s: not done within %s", what, bound(within))
	}
}

// Until checks cond until it holds, failing the test if it does not within the bound.
// Use it only for state nothing signals (a table, a process); wait on a channel when
// the code under test can send one. It returns how long the wait took.
func Until(t testing.TB, what string, cond func() bool, within ...time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	limit := bound(within)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("testwait: %s: not within %s", what, limit)
		}
		<-tick.C
	}
	return time.Since(start)
}

// Never checks that cond stays false for d (the test's way to say "nothing happens").
func Never(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	end := time.NewTimer(d)
	defer end.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		if cond() {
			t.Fatalf("testwait: %s happened", what)
		}
		select {
		case <-end.C:
			return
		case <-tick.C:
		}
	}
}

func bound(within []time.Duration) time.Duration {
	if len(within) > 0 && within[0] > 0 {
		return within[0]
	}
	return Timeout
}
