package streamdb

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Tx is a transaction that can append to streams and write the caller's own tables
// together, for operations that must be atomic across both (spawning an entity with its
// stream, a signal that changes a status and appends an event, a handler's output with
// its acknowledgement). Readers are notified after it commits.
type Tx struct {
	store *Store
	tx    pgx.Tx
	w     writeSet
	gone  []int64
}

// WithTx runs fn in a transaction and commits it when fn returns nil. Deadlocks and
// serialization failures re-run fn (at most 3 times), so fn must only do database work
// through tx and must not keep side effects of an earlier attempt.
func (s *Store) WithTx(ctx context.Context, fn func(ctx context.Context, tx *Tx) error) error {
	for attempt := 0; ; attempt++ {
		t, err := s.runTx(ctx, fn)
		if err != nil {
			if retryable(err) && attempt < 3 {
				time.Sleep(time.Duration(attempt+1) * 5 * time.Millisecond)
				continue
			}
			return err
		}
		s.publish(&t.w)
		for _, id := range t.gone {
			s.publishGone(id)
		}
		return nil
	}
}

func (s *Store) runTx(ctx context.Context, fn func(ctx context.Context, tx *Tx) error) (*Tx, error) {
	pgtx, err := s.pool.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return nil, fmt.Errorf("streamdb: begin: %w", err)
	}
	defer func() { _ = pgtx.Rollback(context.WithoutCancel(ctx)) }()
	t := &Tx{store: s, tx: pgtx}
	if err := fn(ctx, t); err != nil {
		return nil, err
	}
	if (!t.w.empty() || len(t.gone) > 0) && s.notifyNeeded() {
		if _, err := pgtx.Exec(ctx, sqlNotify, s.opts.NotifyChannel, s.notifyPayload(&t.w, t.gone...)); err != nil {
			return nil, err
		}
	}
	if err := pgtx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("streamdb: commit: %w", err)
	}
	return t, nil
}

// Append appends within the transaction, with the same rules as Store.Append. An error
// about the request (not found, closed, producer fencing, ...) leaves the transaction
// usable; the caller decides whether to abort.
func (t *Tx) Append(ctx context.Context, req *AppendRequest) (AppendResult, error) {
	results, errs, w, err := t.store.runAppends(ctx, t.tx, time.Now(), []*AppendRequest{req}, false)
	if err != nil {
		return AppendResult{}, err
	}
	for _, id := range w.order {
		t.w.touch(w.touched[id])
	}
	return results[0], errs[0]
}

// Exec runs a statement of the caller's own in the transaction.
func (t *Tx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return t.tx.Exec(ctx, sql, args...)
}

// Query runs a query of the caller's own in the transaction.
func (t *Tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.tx.Query(ctx, sql, args...)
}

// QueryRow runs a single-row query of the caller's own in the transaction.
func (t *Tx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return t.tx.QueryRow(ctx, sql, args...)
}

// SendBatch sends a batch of the caller's own statements in the transaction.
func (t *Tx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return t.tx.SendBatch(ctx, b)
}
