package dssub

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testwait"
)

func TestTargetOf(t *testing.T) {
	for raw, want := range map[string]string{
		"http://127.0.0.1:8080/wake":      "http://127.0.0.1:8080",
		"http://127.0.0.1:8080/other?x=1": "http://127.0.0.1:8080",
		"HTTP://LocalHost/wake":           "http://localhost:80",
		"https://hooks.example.com/a":     "https://hooks.example.com:443",
		"https://hooks.example.com:443/b": "https://hooks.example.com:443",
		"http://[::1]:9/x":                "http://[::1]:9",
	} {
		require.Equal(t, want, targetOf(raw), raw)
	}
	require.NotEqual(t, targetOf("http://127.0.0.1:1/"), targetOf("http://127.0.0.1:2/"), "ports are targets of their own")
}

// The slots of a target go to its waiters in arrival order; a waiter that gives up
// leaves the line, and a full line refuses at once.
func TestTargetSlotsQueue(t *testing.T) {
	ts := newTargetSlots(1, 2)
	ctx := context.Background()
	far := time.Now().Add(time.Minute)
	require.NoError(t, ts.acquire(ctx, "a", far))
	require.NoError(t, ts.acquire(ctx, "b", far), "another target has slots of its own")

	got := make(chan int, 2)
	for i := 1; i <= 2; i++ {
		go func() {
			if ts.acquire(ctx, "a", far) == nil {
				got <- i
			}
		}()
		testwait.Until(t, "the waiter to queue", func() bool { _, w := ts.state("a"); return w == i }, 5*time.Second)
	}
	require.ErrorIs(t, ts.acquire(ctx, "a", far), errTargetQueueFull)

	ts.release("a")
	require.Equal(t, 1, <-got, "first come, first served")
	ts.release("a")
	require.Equal(t, 2, <-got)
	busy, waiting := ts.state("a")
	require.Equal(t, [2]int{1, 0}, [2]int{busy, waiting}, "a handed-over slot stays taken")

	// a waiter whose deadline passes leaves the line; an idle target is forgotten
	require.ErrorIs(t, ts.acquire(ctx, "a", time.Now().Add(20*time.Millisecond)), errSlotWaitExpired)
	busy, waiting = ts.state("a")
	require.Equal(t, [2]int{1, 0}, [2]int{busy, waiting})
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, ts.acquire(cctx, "a", far), context.Canceled)
	ts.release("a")
	ts.release("b")
	ts.mu.Lock()
	require.Empty(t, ts.targets)
	ts.mu.Unlock()
}
