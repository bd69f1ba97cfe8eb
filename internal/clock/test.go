package clock

import (
	"slices"
	"sync"
	"time"
)

// Test is a clock that moves only when the test moves it. Its timers fire when Advance
// or Set reaches their deadline. It is safe for concurrent use.
type Test struct {
	mu     sync.Mutex
	now    time.Time
	timers []*testTimer
}

type testTimer struct {
	at time.Time
	ch chan time.Time
}

// NewTest returns a Test clock that reads start. Give it the wall time (time.Now())
// when the test also writes rows stamped by the database's own now(): the two then
// agree until the test moves the clock forward.
func NewTest(start time.Time) *Test {
	// Postgres keeps microseconds and no monotonic reading: a time written and read back
	// compares equal to the clock's.
	return &Test{now: start.Round(0).Truncate(time.Microsecond)}
}

// Now is the clock's time.
func (c *Test) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// SQL is the clock's time: queries decide with it instead of the database's now().
func (c *Test) SQL() *time.Time {
	now := c.Now()
	return &now
}

// TimerAt returns a timer that fires when the clock reaches at.
func (c *Test) TimerAt(at time.Time) *Timer {
	t := &testTimer{at: at, ch: make(chan time.Time, 1)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !at.After(c.now) {
		t.ch <- c.now
		return &Timer{C: t.ch, stop: func() bool { return false }}
	}
	c.timers = append(c.timers, t)
	return &Timer{C: t.ch, stop: func() bool { return c.remove(t) }}
}

func (c *Test) remove(t *testTimer) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.timers, t)
	if i < 0 {
		return false
	}
	c.timers = slices.Delete(c.timers, i, i+1)
	return true
}

// Advance moves the clock forward by d, fires the timers it reached, and returns the
// new time.
func (c *Test) Advance(d time.Duration) time.Time {
	if d < 0 {
		panic("clock: a Test clock does not go back")
	}
	return c.Set(c.Now().Add(d))
}

// Set moves the clock to t (not back) and fires the timers it reached.
func (c *Test) Set(t time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.Before(c.now) {
		panic("clock: a Test clock does not go back")
	}
	c.now = t
	keep := c.timers[:0]
	for _, tm := range c.timers {
		if tm.at.After(t) {
			keep = append(keep, tm)
			continue
		}
		tm.ch <- t
	}
	clear(c.timers[len(keep):])
	c.timers = keep
	return t
}

// Waiting is how many timers wait for the clock: a test that must know a service is
// asleep on the clock (not still working) before it moves it waits for this.
func (c *Test) Waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}
