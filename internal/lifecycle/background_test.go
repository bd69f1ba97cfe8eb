package lifecycle

import (
	"testing"

	"github.com/entityd/entityd/internal/testwait"
)

// Wait waits for the running goroutines, and a goroutine offered once Wait has begun is
// refused (an SSE subscriber parking during shutdown must not start a hub nobody waits
// for: the race detector caught WaitGroup.Add racing Wait there).
func TestBackgroundRefusesAfterWait(t *testing.T) {
	var b Background
	release := make(chan struct{})
	ran := make(chan struct{})
	if !b.Go(func() { close(ran); <-release }) {
		t.Fatal("refused before Wait")
	}
	testwait.Closed(t, ran, "the goroutine runs")
	waited := make(chan struct{})
	go func() { b.Wait(); close(waited) }()
	testwait.Until(t, "Wait has begun", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.closing
	})
	if b.Go(func() { t.Error("ran after Wait began") }) {
		t.Fatal("accepted after Wait began")
	}
	select {
	case <-waited:
		t.Fatal("Wait returned while a goroutine ran")
	default:
	}
	close(release)
	testwait.Closed(t, waited, "Wait returns once the goroutine ends")
}
