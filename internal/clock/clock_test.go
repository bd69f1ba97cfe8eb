package clock

import (
	"context"
	"testing"
	"time"

	"github.com/entityd/entityd/internal/testwait"
)

func TestTestClockFiresTimersWhenItReachesThem(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 6789, time.UTC)
	c := NewTest(start)
	if got := c.Now(); !got.Equal(start.Truncate(time.Microsecond)) {
		t.Fatalf("now %v", got)
	}
	soon, later := After(c, time.Second), After(c, time.Minute)
	stopped := After(c, 2*time.Second)
	if !stopped.Stop() || c.Waiting() != 2 {
		t.Fatalf("a stopped timer is released: %d waiting", c.Waiting())
	}
	c.Advance(999 * time.Millisecond)
	select {
	case <-soon.C:
		t.Fatal("fired before its time")
	default:
	}
	at := c.Advance(time.Millisecond)
	if got := <-soon.C; !got.Equal(at) {
		t.Fatalf("fired with %v, want %v", got, at)
	}
	select {
	case <-later.C:
		t.Fatal("the later timer fired")
	default:
	}
	if c.Waiting() != 1 {
		t.Fatalf("%d waiting", c.Waiting())
	}
	if *c.SQL() != at {
		t.Fatal("SQL is the clock's time")
	}
}

// A timer made for a deadline the clock has passed fires at once: a test that moves the
// clock before a service made its timer does not lose the wake-up.
func TestTestClockTimerInThePastFiresAtOnce(t *testing.T) {
	c := NewTest(time.Now())
	deadline := c.Now().Add(time.Second)
	c.Advance(time.Hour)
	select {
	case <-c.TimerAt(deadline).C:
	default:
		t.Fatal("a passed deadline did not fire")
	}
}

func TestSleepEndsWithTheClockOrTheContext(t *testing.T) {
	c := NewTest(time.Now())
	done := make(chan bool)
	go func() { done <- Sleep(context.Background(), c, time.Minute) }()
	testwait.Until(t, "the sleeper's timer", func() bool { return c.Waiting() == 1 })
	c.Advance(time.Minute)
	if !<-done {
		t.Fatal("Sleep reported a cancelled context")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, c, time.Minute) {
		t.Fatal("Sleep outlived its context")
	}
}

func TestWallClockDefersToTheDatabase(t *testing.T) {
	if Or(nil).SQL() != nil {
		t.Fatal("the wall clock leaves now() to the database")
	}
	if !Sleep(context.Background(), Wall, time.Millisecond) {
		t.Fatal("Sleep on the wall clock")
	}
}
