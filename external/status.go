package external

import (
	"context"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wake"
)

// A remote handler's wake shows in the entity's status, as in the reference: "running"
// from the wake's delivery to a webhook (or a runner's claim: the Enricher, markRunning)
// until the wake ends, then "idle" — or "stopped" for an entity that was stopping (a
// SIGTERM to a running entity waits for the handler's wake to end). The end is written
// in the transaction that ends the wake (dssub's WakeEnded): a done callback or ack, a
// webhook's own {"done":true}, a wake given up on. A wake whose lease lapses (its
// handler vanished) leaves the status to the next wake's end.

// WakeEnded is dssub's Options.WakeEnded: the end of a wake whose primary stream is path
// ("/<type>/<id>/main" for an entity; other streams are no entity's and change nothing).
func WakeEnded(ctx context.Context, tx *streamdb.Tx, path string) error {
	_, url, kind, ok := entitypath.Parse(path)
	if !ok || kind != entitypath.KindMain {
		return nil
	}
	before, err := entity.MarkWakeDone(ctx, tx, url)
	if err != nil || before != entity.StatusStopping {
		return err
	}
	return wake.FinishStop(ctx, tx, url)
}

// markRunning shows a wake about to reach an entity's handler.
func markRunning(ctx context.Context, registry *entity.Registry, e *entity.Entity) error {
	if e.Status != entity.StatusIdle {
		return nil // running already, or stopping (its handler still gets the wake)
	}
	return registry.MarkRunning(ctx, e.URL)
}
