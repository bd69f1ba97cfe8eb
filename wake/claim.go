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

// registerHolder records this process as a holder with a fresh lease.
func registerHolder(ctx context.Context, pool streamdb.DB, id string, lease time.Duration) error {
	host, _ := os.Hostname()
	_, err := pool.Exec(ctx, `INSERT INTO wake_holders (holder_id, lease_until, hostname)
		VALUES ($1, now() + $2::interval, $3)
		ON CONFLICT (holder_id) DO UPDATE SET lease_until = excluded.lease_until`, id, lease.String(), host)
	return err
}

// heartbeat renews this process's lease for every entity it holds in one statement.
func heartbeat(ctx context.Context, pool streamdb.DB, id string, lease time.Duration) error {
	tag, err := pool.Exec(ctx, `UPDATE wake_holders SET lease_until = now() + $2::interval WHERE holder_id = $1`, id, lease.String())
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return registerHolder(ctx, pool, id, lease)
	}
	return nil
}

// unregisterHolder releases everything this process holds and removes its lease.
func unregisterHolder(ctx context.Context, pool streamdb.DB, id string) error {
	if _, err := pool.Exec(ctx, `UPDATE entity_wake SET holder = NULL, updated_at = now() WHERE holder = $1`, id); err != nil {
		return err
	}
	_, err := pool.Exec(ctx, `DELETE FROM wake_holders WHERE holder_id = $1`, id)
	return err
}

// claim takes the entities among urls that nobody validly holds, bumping their epochs.
// Rows locked by someone else's acknowledgement or claim are skipped: that work is being
// handled.
func claim(ctx context.Context, pool streamdb.DB, holder string, urls []string) ([]claimed, error) {
	rows, err := pool.Query(ctx, `WITH c AS (
			SELECT w.entity_url FROM entity_wake w
			WHERE w.entity_url = ANY($2)
			  AND (w.holder IS NULL OR w.holder = $1 OR NOT EXISTS (
					SELECT 1 FROM wake_holders h WHERE h.holder_id = w.holder AND h.lease_until > now()))
			ORDER BY w.entity_url
			FOR UPDATE SKIP LOCKED)
		UPDATE entity_wake w SET holder = $1, epoch = w.epoch + 1, updated_at = now()
		FROM c WHERE w.entity_url = c.entity_url
		RETURNING w.entity_url, w.entity_type, w.stream_id, w.epoch, w.scanned_seq, w.attempts, w.retry_at, w.consumed`,
		holder, urls)
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
	_, err := pool.Exec(ctx, `UPDATE entity_wake SET holder = NULL, updated_at = now()
		WHERE entity_url = $1 AND holder = $2 AND epoch = $3`, url, holder, epoch)
	return err
}

// pendingUnheld finds entities of the given types whose streams have events beyond what
// was handled and that nobody validly holds: work a crashed process left behind, or
// whose notification was missed.
func pendingUnheld(ctx context.Context, pool streamdb.DB, types []string, limit int) ([]string, error) {
	rows, err := pool.Query(ctx, `SELECT w.entity_url FROM entity_wake w
		JOIN stream_heads s ON s.id = w.stream_id
		JOIN entity_statuses e ON e.url = w.entity_url
		WHERE w.entity_type = ANY($1) AND s.tail_seq > w.scanned_seq AND NOT s.closed
		  AND e.status <> ALL($3)
		  AND (w.holder IS NULL OR NOT EXISTS (
				SELECT 1 FROM wake_holders h WHERE h.holder_id = w.holder AND h.lease_until > now()))
		LIMIT $2`, types, limit, entity.Undeliverable())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
