package wake

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/streamdb"
)

// claimed is the state of an entity this process just claimed.
type claimed struct {
	url, entityType string
	streamID        int64
	epoch           int64
	scanned         int64
	attempts        int
	retryAt         *time.Time
	consumed        []int64
}

// Leases are judged with now, the dispatcher's clock as a query parameter (nil: the
// database's now(), one clock for every process).

// registerHolder records this process as a holder with a fresh lease.
func registerHolder(ctx context.Context, pool streamdb.DB, id string, lease time.Duration, now *time.Time) error {
	host, _ := os.Hostname()
	_, err := pool.Exec(ctx, sqlRegisterHolder, id, lease.String(), host, now)
	return err
}

// heartbeat renews this process's lease for every entity it holds in one statement.
func heartbeat(ctx context.Context, pool streamdb.DB, id string, lease time.Duration, now *time.Time) error {
	tag, err := pool.Exec(ctx, sqlHeartbeat, id, lease.String(), now)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return registerHolder(ctx, pool, id, lease, now)
	}
	return nil
}

// unregisterHolder releases everything this process holds and removes its lease.
func unregisterHolder(ctx context.Context, pool streamdb.DB, id string) error {
	if _, err := pool.Exec(ctx, sqlReleaseHeldBy, id); err != nil {
		return err
	}
	_, err := pool.Exec(ctx, sqlDeleteHolder, id)
	return err
}

// claim takes the entities among urls that nobody validly holds, bumping their epochs.
// Rows locked by someone else's acknowledgement or claim are skipped: that work is being
// handled.
func claim(ctx context.Context, pool streamdb.DB, holder string, urls []string, now *time.Time) ([]claimed, error) {
	rows, err := pool.Query(ctx, sqlClaim, holder, urls, now)
	if err != nil {
		return nil, fmt.Errorf("wake: claim: %w", err)
	}
	defer rows.Close()
	var out []claimed
	for rows.Next() {
		var c claimed
		if err := rows.Scan(&c.url, &c.entityType, &c.streamID, &c.epoch, &c.scanned, &c.attempts, &c.retryAt, &c.consumed); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// release lets go of an entity (only if this claim still holds it).
func release(ctx context.Context, pool streamdb.DB, holder, url string, epoch int64) error {
	_, err := pool.Exec(ctx, sqlRelease, url, holder, epoch)
	return err
}

// pendingUnheld finds entities of the given types whose streams have events beyond what
// was handled and that nobody validly holds: work a crashed process left behind, or
// whose notification was missed.
func pendingUnheld(ctx context.Context, pool streamdb.DB, types []string, limit int, now *time.Time) ([]string, error) {
	rows, err := pool.Query(ctx, sqlPendingUnheld, types, limit, entity.Undeliverable(), now)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
