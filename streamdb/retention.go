package streamdb

import (
	"context"
	"fmt"
	"time"

	"github.com/entityd/entityd/streamdb/internal/dbsqlc"
)

// PurgeBatch is how many rows one purge statement deletes: small enough that a purge
// never holds many locks or a long transaction, and runs beside the append path.
const PurgeBatch = 5000

// PurgeDedupe deletes the idempotency keys (keyed appends; the entity send key) older than
// window, in batches, and returns how many went. A retry with such a key after that is a
// new append: the window is the documented dedupe window.
func (s *Store) PurgeDedupe(ctx context.Context, window time.Duration) (int64, error) {
	return PurgeBatches(ctx, func(ctx context.Context) (int64, error) {
		n, err := queries.PurgeDedupe(ctx, s.pool, dbsqlc.PurgeDedupeParams{MaxAge: window, MaxRows: PurgeBatch})
		if err != nil {
			return 0, fmt.Errorf("streamdb: purge dedupe keys: %w", err)
		}
		return n, nil
	})
}

// PurgeBatches runs one batch after another until a batch deletes fewer than PurgeBatch
// rows, and returns the total (the history tables of other packages purge with it too).
func PurgeBatches(ctx context.Context, batch func(context.Context) (int64, error)) (int64, error) {
	var total int64
	for {
		n, err := batch(ctx)
		total += n
		if err != nil || n < PurgeBatch {
			return total, err
		}
		if ctx.Err() != nil {
			return total, ctx.Err()
		}
	}
}
