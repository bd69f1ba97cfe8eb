package lifecycle

import "sync"

// Background tracks goroutines that requests start (SSE hubs, an outage probe) so that
// Wait can wait for them. A plain WaitGroup is not enough: an SSE subscriber parks in
// its hub after net/http has let go of its hijacked connection, so neither the HTTP
// server's shutdown nor Shutdown's cancellation orders that start before Wait. Go
// refuses once Wait has begun, and the caller treats the refusal as shutting down.
type Background struct {
	mu      sync.Mutex
	closing bool
	wg      sync.WaitGroup
}

// Go runs f as a tracked goroutine, or reports false when Wait has begun.
func (b *Background) Go(f func()) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closing {
		return false
	}
	b.wg.Go(f)
	return true
}

// Wait refuses new goroutines and waits for the running ones.
func (b *Background) Wait() {
	b.mu.Lock()
	b.closing = true
	b.mu.Unlock()
	b.wg.Wait()
}
