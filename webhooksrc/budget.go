package webhooksrc

import (
	"sync"
	"time"
)

// budget is each tenant's (source owner's) allowance of deliveries and delivered bytes:
// two token buckets per owner that refill continuously at a per-minute rate and hold at
// most a minute's worth. It is per process: N processes take up to N times the rate.
type budget struct {
	perMinute, bytesPerMinute float64
	mu                        sync.Mutex
	owners                    map[string]*allowance
}

type allowance struct {
	count, bytes float64
	at           time.Time
}

// maxOwners bounds the map: owners idle for a minute are full again, so forgetting them
// changes nothing.
const maxOwners = 100_000

func newBudget(perMinute, bytesPerMinute int64) *budget {
	return &budget{perMinute: float64(perMinute), bytesPerMinute: float64(bytesPerMinute), owners: map[string]*allowance{}}
}

// take charges one delivery of n bytes to owner; it reports false (and charges nothing)
// when the owner's allowance is spent, with how long until it would fit.
func (b *budget) take(owner string, n int64, now time.Time) (bool, time.Duration) {
	if b.perMinute <= 0 && b.bytesPerMinute <= 0 {
		return true, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.owners[owner]
	if a == nil {
		if len(b.owners) >= maxOwners {
			for k, x := range b.owners {
				if now.Sub(x.at) > time.Minute {
					delete(b.owners, k)
				}
			}
		}
		a = &allowance{count: b.perMinute, bytes: b.bytesPerMinute, at: now}
		b.owners[owner] = a
	}
	elapsed := now.Sub(a.at).Minutes()
	if elapsed > 0 {
		a.count = min(b.perMinute, a.count+elapsed*b.perMinute)
		a.bytes = min(b.bytesPerMinute, a.bytes+elapsed*b.bytesPerMinute)
		a.at = now
	}
	wait := time.Duration(0)
	if b.perMinute > 0 && a.count < 1 {
		wait = max(wait, time.Duration((1-a.count)/b.perMinute*float64(time.Minute)))
	}
	if b.bytesPerMinute > 0 && a.bytes < float64(n) {
		wait = max(wait, time.Duration((float64(n)-a.bytes)/b.bytesPerMinute*float64(time.Minute)))
	}
	if wait > 0 {
		return false, wait
	}
	a.count--
	a.bytes -= float64(n)
	return true, 0
}
