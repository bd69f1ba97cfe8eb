package testwait

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestRecvReturnsTheValue(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if got := Recv(t, ch, "a value"); got != 7 {
		t.Fatalf("got %d", got)
	}
}

func TestUntilSeesALaterCondition(t *testing.T) {
	var n atomic.Int32
	go func() {
		for range 3 {
			n.Add(1)
		}
	}()
	Until(t, "three increments", func() bool { return n.Load() == 3 })
}

// A wait that times out must fail the test; run it on a fake TB to see that it does.
func TestUntilFailsAfterItsBound(t *testing.T) {
	ft := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { _ = recover() }()
		Until(ft, "never", func() bool { return false }, 30*time.Millisecond)
	}()
	<-done
	if !ft.failed.Load() {
		t.Fatal("Until did not fail after its bound")
	}
}

type fakeTB struct {
	testing.TB
	failed atomic.Bool
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(string, ...any) {
	f.failed.Store(true)
	panic("fatal")
}
