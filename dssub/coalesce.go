package dssub

import (
	"context"
	"sync"
	"time"
)

// coalescer runs one statement for the requests of many callers, the way the send path's
// group commit does for appends: while a statement runs, requests queue, and the next
// statement takes all of them (up to max). Every webhook wake makes a claim and records
// the webhook's answer; one statement and one commit for many wakes costs Postgres far
// less than one each.
type coalescer[Req, Res any] struct {
	// run answers reqs in order; an error answers all of them.
	run func(ctx context.Context, reqs []Req) ([]Res, error)
	max int

	mu      sync.Mutex
	queue   []*coalesced[Req, Res]
	running bool
}

type coalesced[Req, Res any] struct {
	req  Req
	res  Res
	err  error
	done chan struct{}
}

// coalesceTimeout bounds one statement: the callers' own contexts do not reach it (it
// serves many), and a statement stuck on a lock must not hold the queue forever.
const coalesceTimeout = 30 * time.Second

func newCoalescer[Req, Res any](max int, run func(ctx context.Context, reqs []Req) ([]Res, error)) *coalescer[Req, Res] {
	return &coalescer[Req, Res]{run: run, max: max}
}

// do queues req and waits for its answer. A caller whose ctx ends stops waiting; its
// request may still be carried out.
func (c *coalescer[Req, Res]) do(ctx context.Context, req Req) (Res, error) {
	call := &coalesced[Req, Res]{req: req, done: make(chan struct{})}
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

func (c *coalescer[Req, Res]) loop() {
	for {
		c.mu.Lock()
		n := min(len(c.queue), c.max)
		if n == 0 {
			c.running = false
			c.mu.Unlock()
			return
		}
		batch := c.queue[:n:n]
		c.queue = c.queue[n:]
		c.mu.Unlock()

		reqs := make([]Req, n)
		for i, call := range batch {
			reqs[i] = call.req
		}
		ctx, cancel := context.WithTimeout(context.Background(), coalesceTimeout)
		res, err := c.run(ctx, reqs)
		cancel()
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
