package streamdb

import (
	"context"
	"errors"
	"time"
)

// ErrReadOnly: the database this process reaches takes no writes (a standby, or a
// read-only default).
var ErrReadOnly = errors.New("streamdb: the database is read-only")

// readyTimeout bounds CanCommit: a load balancer's probe must get an answer even when a
// synchronous standby is gone and commits hang.
const readyTimeout = 2 * time.Second

// CanCommit reports whether a write transaction commits now: the connection reaches a
// primary (not a standby left behind after a failover) whose commits are durable in the
// configured way, including a synchronous standby's acknowledgement. It costs one
// transaction ID per call.
func (s *Store) CanCommit(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	row, err := queries.AssignXid(ctx, tx)
	if err != nil {
		return err
	}
	if row.ReadOnly {
		return ErrReadOnly
	}
	return tx.Commit(ctx)
}
