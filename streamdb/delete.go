package streamdb

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/entityd/entityd/streamdb/internal/dbsqlc"
)

// Delete deletes the stream at path. A stream that forks still read through is only
// soft-deleted: it answers 410 from then on, keeps its data for the forks, and is removed
// when the last fork goes away. check, when not nil, judges the live stream under its
// row lock first (the caller's access decision); its error is returned as it is.
func (s *Store) Delete(ctx context.Context, path string, check func(*Meta) error) error {
	var expired bool
	err := s.WithTx(ctx, func(ctx context.Context, tx *Tx) error {
		err := tx.Delete(ctx, path, check)
		if errors.Is(err, errExpiredDeleted) {
			expired = true
			return nil // keep the clean-up of the expired stream
		}
		return err
	})
	if err == nil && expired {
		return ErrNotFound
	}
	return err
}

// errExpiredDeleted: the stream had expired; Delete removed its remains and the caller
// is told it was not found.
var errExpiredDeleted = errors.New("streamdb: expired stream removed")

// Delete deletes a stream inside the transaction; see Store.Delete.
func (t *Tx) Delete(ctx context.Context, path string, check func(*Meta) error) error {
	m, err := t.lockByPath(ctx, path)
	if err != nil {
		return err
	}
	if m == nil {
		return ErrNotFound
	}
	if err := liveness(m, t.store.clock.Now()); err != nil {
		if err == ErrNotFound { // expired and unreferenced: finish the sweeper's job
			if derr := t.hardDelete(ctx, m); derr != nil {
				return derr
			}
			return errExpiredDeleted
		}
		return err
	}
	if check != nil {
		if err := check(m); err != nil {
			return err
		}
	}
	if m.Refcount > 0 {
		if err := queries.SoftDelete(ctx, t, m.ID); err != nil {
			return fmt.Errorf("streamdb: soft-delete stream: %w", err)
		}
		t.gone = append(t.gone, m.ID)
		return nil
	}
	return t.hardDelete(ctx, m)
}

// hardDelete removes m and its data, then releases its fork source, removing that too
// when it was waiting only for this fork.
func (t *Tx) hardDelete(ctx context.Context, m *Meta) error {
	for m != nil {
		for _, del := range []func(context.Context, dbsqlc.DBTX, int64) error{
			queries.DeleteMessages,
			queries.DeleteProducers,
			queries.DeleteDedupe,
			queries.DeleteStream,
		} {
			if err := del(ctx, t, m.ID); err != nil {
				return fmt.Errorf("streamdb: delete stream: %w", err)
			}
		}
		t.gone = append(t.gone, m.ID)
		if !m.IsFork() {
			return nil
		}
		id, err := queries.UnrefFork(ctx, t, m.ForkSourceID)
		if err != nil {
			return fmt.Errorf("streamdb: release fork source: %w", err)
		}
		src, err := t.metaByID(ctx, id)
		if err != nil {
			return err
		}
		if src.Refcount > 0 || !(src.SoftDeleted || src.Expired(t.store.clock.Now())) {
			return nil
		}
		m = src
	}
	return nil
}

// sweepRound deletes expired, unreferenced streams; it runs every SweepInterval. Access
// paths check expiry themselves, so the sweeper only reclaims space and may run rarely.
func (s *Store) sweepRound(ctx context.Context) {
	n, err := s.Sweep(ctx)
	if err != nil && ctx.Err() == nil {
		s.log.Warn("expiry sweep failed", zap.Error(err))
	} else if n > 0 {
		s.log.Info("expired streams deleted", zap.Int("streams", n))
	}
}

// Sweep deletes up to 500 expired, unreferenced streams and returns how many it deleted.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	paths, err := queries.ExpiredStreams(ctx, s.pool, s.clock.SQL())
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range paths {
		err := s.WithTx(ctx, func(ctx context.Context, tx *Tx) error {
			m, err := tx.lockByPath(ctx, p)
			if err != nil || m == nil || m.Refcount > 0 || !m.Expired(s.clock.Now()) {
				return err
			}
			n++
			return tx.hardDelete(ctx, m)
		})
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
