// Package inflight bounds the bytes the server holds for requests in flight (see
// Budget), and reads request bodies into reservations of their size. Both HTTP rooms
// (the Durable Streams protocol and Electric's entity API) reserve through one Budget.
package inflight

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Budget bounds the bytes the server holds for requests in flight — response bodies
// being written, request bodies being read and stored — process-wide and per principal,
// so that slow or greedy clients of one tenant cannot grow the process past its memory
// limit, or starve the others. A request reserves what it will hold before it allocates
// it and releases it when done; one that cannot get its bytes within a short wait is
// refused (503 + Retry-After: the client comes back, instead of the server queueing
// without end).
//
// The rules, for a request of n bytes by a key (a principal) that holds own bytes:
//   - n fits when the key's bytes stay within share and everybody's within limit;
//   - n larger than share fits only while the key holds nothing else, and n larger than
//     limit only while nothing at all is held — so data already stored (a message larger
//     than today's limits) can always be read, one at a time, and never deadlocks;
//   - a key with an empty kind (the SSE hubs, which serve many principals at once) is
//     held to limit only.
//
// The hot path is one short mutex section per reservation and one per release; only
// a request that has to wait allocates (a timer).
type Budget struct {
	limit int64
	share int64
	wait  time.Duration

	mu    sync.Mutex
	used  int64
	held  map[Key]int64
	freed chan struct{} // closed at the next release; made by the first waiter
}

// Key is whose bytes these are: a principal (kind, id), a stream written with its
// write token ("stream", path), or a shared server part (kind "").
type Key struct{ Kind, ID string }

// errBusy is a reservation that did not fit within the wait.
var errBusy = errors.New("inflight: bytes in flight at their limit")

// New returns a budget of limit bytes in all, share per key, and wait for a reservation
// to fit before it is refused (0 or less: refused at once).
func New(limit, share int64, wait time.Duration) *Budget {
	share = min(share, limit)
	return &Budget{limit: limit, share: share, wait: wait, held: map[Key]int64{}}
}

// Hold is a reservation. Its zero value holds nothing; Release is idempotent.
type Hold struct {
	b   *Budget
	key Key
	n   int64
}

// Acquire takes n bytes for key, waiting up to the budget's wait (and no longer than
// ctx) for them to be free.
func (b *Budget) Acquire(ctx context.Context, key Key, n int64) (Hold, error) {
	h := Hold{b: b, key: key}
	if n <= 0 {
		return h, nil
	}
	err := h.resize(ctx, n)
	return h, err
}

// resize makes the reservation n bytes: shrinking never waits; growing waits as
// Acquire does. On failure the reservation is unchanged.
func (h *Hold) resize(ctx context.Context, n int64) error {
	b := h.b
	if b == nil || n == h.n {
		return nil
	}
	b.mu.Lock()
	if n < h.n {
		b.take(h.key, n-h.n)
		h.n = n
		b.mu.Unlock()
		return nil
	}
	delta := n - h.n
	if b.fits(h.key, h.n, delta) {
		b.take(h.key, delta)
		h.n = n
		b.mu.Unlock()
		return nil
	}
	if b.wait <= 0 {
		b.mu.Unlock()
		return errBusy
	}
	timer := time.NewTimer(b.wait)
	defer timer.Stop()
	for {
		if b.freed == nil {
			b.freed = make(chan struct{})
		}
		freed := b.freed
		b.mu.Unlock()
		var err error
		select {
		case <-freed:
		case <-timer.C:
			err = errBusy
		case <-ctx.Done():
			err = ctx.Err()
		}
		b.mu.Lock()
		if b.fits(h.key, h.n, delta) {
			b.take(h.key, delta)
			h.n = n
			b.mu.Unlock()
			return nil
		}
		if err != nil {
			b.mu.Unlock()
			return err
		}
	}
}

// Release gives the reservation back.
func (h *Hold) Release() {
	if h.b == nil || h.n == 0 {
		return
	}
	h.b.mu.Lock()
	h.b.take(h.key, -h.n)
	h.b.mu.Unlock()
	h.n = 0
}

// fits reports whether key, holding own bytes under this reservation, may take delta
// more. b.mu is held.
func (b *Budget) fits(key Key, own, delta int64) bool {
	total := own + delta
	if total > b.limit {
		if b.used-own != 0 {
			return false
		}
	} else if b.used+delta > b.limit {
		return false
	}
	if key.Kind == "" {
		return true
	}
	mine := b.held[key]
	if total > b.share {
		return mine-own == 0
	}
	return mine+delta <= b.share
}

// take adds delta (negative: gives back) to key and the total, and wakes the waiters
// when bytes were given back. b.mu is held.
func (b *Budget) take(key Key, delta int64) {
	b.used += delta
	if key.Kind != "" {
		if v := b.held[key] + delta; v > 0 {
			b.held[key] = v
		} else {
			delete(b.held, key)
		}
	}
	if delta < 0 && b.freed != nil {
		close(b.freed)
		b.freed = nil
	}
}

// InFlight is the bytes reserved now (for metrics and tests).
func (b *Budget) InFlight() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
