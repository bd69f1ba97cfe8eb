package wake

import (
	"context"
	"fmt"
	"time"

	"github.com/entityd/entityd/streamdb"
)

// PurgeFailures deletes the records of work given up on (wake_failures, shown by the wake
// status endpoint) older than retention. The stream keeps its error events.
func PurgeFailures(ctx context.Context, pool streamdb.DB, retention time.Duration) (int64, error) {
	return streamdb.PurgeBatches(ctx, func(ctx context.Context) (int64, error) {
		tag, err := pool.Exec(ctx, sqlPurgeFailures, retention, streamdb.PurgeBatch)
		if err != nil {
			return 0, fmt.Errorf("wake: purge failures: %w", err)
		}
		return tag.RowsAffected(), nil
	})
}
