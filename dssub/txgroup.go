package dssub

import (
	"context"
	"hash/fnv"
	"sync"

	"github.com/entityd/entityd/streamdb"
)

// txGroup runs the transactions of concurrent subscription operations (evaluations,
// delivery results, callbacks) together: a batch shares one transaction and one commit
// (one WAL flush), each operation under a savepoint of its own, so that one that fails
// rolls back alone. Without it every wake pays three commits of its own, and the commits
// are what bounds wakes per second.
//
// There is no background goroutine: the first caller that finds its shard idle leads,
// committing batches until the shard's queue is empty; the others wait for their result.
// Operations on one subscription always land in the same shard, so two batches of this
// process never wait for each other's subscription locks in a cycle.
type txGroup struct {
	store  *streamdb.Store
	shards [groupShards]groupShard
}

const (
	groupShards   = 8
	maxGroupBatch = 64
)

type groupShard struct {
	mu      sync.Mutex
	queue   []*groupOp
	leading bool
}

type groupOp struct {
	ctx  context.Context
	fn   func(ctx context.Context, tx *streamdb.Tx) error
	done chan error
}

// do runs fn in a transaction shared with other operations, keyed by the subscription
// it works on, and returns once that transaction committed (nil) or fn's own error.
// fn must be re-runnable, as for streamdb.WithTx.
func (g *txGroup) do(ctx context.Context, key string, fn func(ctx context.Context, tx *streamdb.Tx) error) error {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	sh := &g.shards[h.Sum32()%groupShards]
	// The operation runs to its end even if the caller gives up: a cancelled statement
	// would take the whole batch's connection down with it.
	op := &groupOp{ctx: context.WithoutCancel(ctx), fn: fn, done: make(chan error, 1)}
	sh.mu.Lock()
	sh.queue = append(sh.queue, op)
	if sh.leading {
		sh.mu.Unlock()
		return <-op.done
	}
	sh.leading = true
	for {
		n := min(len(sh.queue), maxGroupBatch)
		batch := sh.queue[:n:n]
		sh.queue = sh.queue[n:]
		sh.mu.Unlock()
		g.commit(batch)
		sh.mu.Lock()
		if len(sh.queue) == 0 {
			sh.leading = false
			sh.queue = nil
			sh.mu.Unlock()
			return <-op.done
		}
	}
}

// commit runs a batch in one transaction and hands each operation its result. An
// operation that hit a deadlock or serialization failure is run again on its own.
func (g *txGroup) commit(batch []*groupOp) {
	if len(batch) == 1 {
		op := batch[0]
		op.done <- g.store.WithTx(op.ctx, op.fn)
		return
	}
	results := make([]error, len(batch))
	err := g.store.WithTx(context.Background(), func(_ context.Context, tx *streamdb.Tx) error {
		for i, op := range batch {
			opErr, txErr := tx.Savepoint(op.ctx, op.fn)
			if txErr != nil {
				return txErr
			}
			results[i] = opErr
		}
		return nil
	})
	for i, op := range batch {
		switch {
		case err != nil:
			op.done <- err
		case streamdb.Retryable(results[i]):
			op.done <- g.store.WithTx(op.ctx, op.fn)
		default:
			op.done <- results[i]
		}
	}
}
