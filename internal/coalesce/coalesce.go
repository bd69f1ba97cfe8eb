// Package coalesce runs one database statement for the requests of many concurrent
// callers (see Coalescer).
package coalesce

import (
	"context"
	"sync"
	"time"

	"github.com/entityd/entityd/internal/dberr"
)

// Coalescer runs one statement for the requests of many callers, the way the send path's
// group commit does for appends: while a statement runs, requests queue, and the next
// statement takes all of them (up to max). Every webhook wake makes a claim, records the
// webhook's answer and reads its entity; one statement and one commit for many wakes
// costs Postgres far less than one each. A request is answered by a statement that
// started after it was made, so a read sees every commit that preceded the request.
type Coalescer[Req, Res any] struct {
	// run answers reqs in order; an error answers all of them.
	run func(ctx context.Context, reqs []Req) ([]Res, error)
	max int

	mu      sync.Mutex
	queue   []*coalesced[Req, Res]
	running bool
}

type coalesced[Req, Res any] struct {
	ctx  context.Context
	req  Req
	res  Res
	err  error
	done chan struct{}
}

// coalesceTimeout bounds one statement: the callers' own contexts do not reach it (it
// serves many), and a statement stuck on a lock must not hold the queue forever.
const coalesceTimeout = 30 * time.Second

// New makes a Coalescer whose statements carry at most max requests each.
func New[Req, Res any](max int, run func(ctx context.Context, reqs []Req) ([]Res, error)) *Coalescer[Req, Res] {
	return &Coalescer[Req, Res]{run: run, max: max}
}

// Do queues req and waits for its answer. A caller whose ctx ends stops waiting; its
// request is dropped if no statement took it yet, and may be carried out otherwise.
func (c *Coalescer[Req, Res]) Do(ctx context.Context, req Req) (Res, error) {
	call := &coalesced[Req, Res]{ctx: ctx, req: req, done: make(chan struct{})}
	c.mu.Lock()
	c.queue = append(c.queue, call)
	if !c.running {
		c.running = true
		go c.loop()
	}
	c.mu.Unlock()
	select {
	case <-call.done:
		return call.res, call.err
	case <-ctx.Done():
		var zero Res
		return zero, ctx.Err()
	}
}

func (c *Coalescer[Req, Res]) loop() {
	for {
		c.mu.Lock()
		n := min(len(c.queue), c.max)
		if n == 0 {
			c.running = false
			c.mu.Unlock()
			return
		}
		taken := c.queue[:n:n]
		c.queue = c.queue[n:]
		c.mu.Unlock()

		batch := make([]*coalesced[Req, Res], 0, n)
		reqs := make([]Req, 0, n)
		for _, call := range taken {
			if err := call.ctx.Err(); err != nil {
				call.err = err // nobody waits for it any more
				close(call.done)
				continue
			}
			batch, reqs = append(batch, call), append(reqs, call.req)
		}
		if len(batch) == 0 {
			continue
		}
		res, err := c.runRetrying(reqs)
		for i, call := range batch {
			if err != nil {
				call.err = err
			} else {
				call.res = res[i]
			}
			close(call.done)
		}
	}
}

// runRetrying runs a statement, again when Postgres aborted it to break a deadlock or a
// serialization conflict (dberr.Retry, as WithTx does).
func (c *Coalescer[Req, Res]) runRetrying(reqs []Req) ([]Res, error) {
	return dberr.Retry(func() ([]Res, error) {
		ctx, cancel := context.WithTimeout(context.Background(), coalesceTimeout)
		defer cancel()
		return c.run(ctx, reqs)
	})
}

// InOrder answers keys from what a statement read, byKey, in the order of keys (the zero
// value for a key it read nothing for): how a statement that read the rows of many
// requests answers each of them.
func InOrder[K comparable, V any](keys []K, byKey map[K]V) []V {
	out := make([]V, len(keys))
	for i, k := range keys {
		out[i] = byKey[k]
	}
	return out
}
