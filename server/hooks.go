package server

import (
	"context"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wake"
	"github.com/entityd/entityd/wakereg"
)

// The registry's hooks: what other parts do inside the transactions that end and spawn
// entities. The registry gets them in its constructor; the parts they call are built
// after it (they need the registry), and are in place before the first request.

// onEntityEnd runs in the transaction that stops or kills an entity.
func (a *Assembly) onEntityEnd(ctx context.Context, tx *streamdb.Tx, url, status string) error {
	if err := wake.NotifyEnd(ctx, tx, url, status); err != nil {
		return err
	}
	// a killed or stopped entity neither subscribes to nor is the source of a wake
	if err := wakereg.RemoveEntityTx(ctx, tx, url); err != nil {
		return err
	}
	return a.dispatch.OnEnd(ctx, tx, url, status)
}

// onSpawn runs in the transaction that spawns an entity.
func (a *Assembly) onSpawn(ctx context.Context, tx *streamdb.Tx, e *entity.Entity, t *entity.Type) (func(), error) {
	// the parent's copy_to_children grants and the spawn's own, in the spawn's transaction
	if err := a.grants.OnSpawn(ctx, tx, e.URL, deref(e.Parent), deref(e.CreatedBy)); err != nil {
		return nil, err
	}
	return a.dispatch.OnSpawn(ctx, tx, e, t)
}
