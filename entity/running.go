package entity

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/entityd/entityd/streamdb"
)

// Remote handlers (Electric's runtime, entityd's runtime.External) show their wakes in the
// status, as the reference does: an entity is "running" from the moment its wake is
// delivered (or claimed by a runner) until the handler says done, then "idle" again.
// One conditional write each: a repeated delivery of the same wake writes nothing, and
// a status the signals set meanwhile (paused, stopping, the ended ones) is never
// overwritten. In-process handlers do not write it (their per-wake state is in wake).

var (
	sqlMarkRunning  = queries.Get("MarkRunning")
	sqlMarkWakeDone = queries.Get("MarkWakeDone")
)

// MarkRunning makes an idle entity running.
func (r *Registry) MarkRunning(ctx context.Context, url string) error {
	_, err := r.pool.Exec(ctx, sqlMarkRunning, url, string(StatusRunning), string(StatusIdle))
	return err
}

// MarkWakeDone makes a running entity idle inside tx (the transaction that ends its
// wake), and reports the status it had before ("" for no such entity): a stopping
// entity is for the caller to stop.
func MarkWakeDone(ctx context.Context, tx *streamdb.Tx, url string) (Status, error) {
	var before string
	err := tx.QueryRow(ctx, sqlMarkWakeDone, url, string(StatusIdle), string(StatusRunning)).Scan(&before)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return Status(before), err
}
