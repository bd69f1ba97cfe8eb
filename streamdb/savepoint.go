package streamdb

import (
	"context"
	"fmt"
)

// Savepoint runs fn under a savepoint of t, so that several independent operations can
// share one transaction (and one commit): when fn fails, what it did is rolled back and
// t stays usable. opErr is fn's error; txErr reports that the savepoint itself failed,
// which leaves t unusable.
func (t *Tx) Savepoint(ctx context.Context, fn func(ctx context.Context, tx *Tx) error) (opErr, txErr error) {
	nested, err := t.tx.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("streamdb: savepoint: %w", err)
	}
	child := &Tx{store: t.store, tx: nested}
	if opErr = fn(ctx, child); opErr != nil {
		if err := nested.Rollback(ctx); err != nil {
			return opErr, fmt.Errorf("streamdb: roll back to savepoint: %w", err)
		}
		return opErr, nil
	}
	if err := nested.Commit(ctx); err != nil {
		return nil, fmt.Errorf("streamdb: release savepoint: %w", err)
	}
	for _, id := range child.w.order {
		t.w.touch(child.w.touched[id])
	}
	t.gone = append(t.gone, child.gone...)
	return nil, nil
}

// Retryable reports a deadlock or serialization failure: the transaction may succeed
// when run again.
func Retryable(err error) bool { return retryable(err) }
