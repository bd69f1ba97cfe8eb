package inbox

import (
	"context"
	"fmt"
	"time"

	"github.com/entityd/entityd/streamdb"
)

// PurgeDelayed deletes delayed sends that finished (could not be delivered, kept with
// last_error for inspection) more than retention ago. Fired ones are deleted as they fire.
func (s *Sender) PurgeDelayed(ctx context.Context, retention time.Duration) (int64, error) {
	return streamdb.PurgeBatches(ctx, func(ctx context.Context) (int64, error) {
		tag, err := s.streams.DB().Exec(ctx, sqlPurgeDelayed, retention, streamdb.PurgeBatch)
		if err != nil {
			return 0, fmt.Errorf("inbox: purge finished delayed sends: %w", err)
		}
		return tag.RowsAffected(), nil
	})
}
