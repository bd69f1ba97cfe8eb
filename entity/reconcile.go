package entity

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/entityd/entityd/slashcmd"
	"github.com/entityd/entityd/streamdb"
)

// reconcileCommands brings the static slash commands of every live entity of t up to
// t's definitions (the reference only seeds them at spawn). Each entity is reconciled in
// its own transaction that also records the revision it now reflects, so an interrupted
// run is finished by the next registration or server start, and concurrent runs for
// different revisions never move an entity backwards. Dynamic layers are untouched.
func (r *Registry) reconcileCommands(ctx context.Context, t *Type) (int, error) {
	defs, err := slashcmd.ParseDefinitions(t.SlashCommands)
	if err != nil {
		return 0, fmt.Errorf("entity: static commands of %s: %w", t.Name, err)
	}
	start := time.Now()
	done := 0
	for {
		rows, err := r.pool.Query(ctx, sqlEntitiesBehindType, t.Name, t.Revision, Ended())
		if err != nil {
			return done, err
		}
		urls, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return done, err
		}
		if len(urls) == 0 {
			break
		}
		for _, url := range urls {
			err := r.streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
				tag, err := tx.Exec(ctx, sqlSetCommandsRevision, url, t.Revision, Ended())
				if err != nil || tag.RowsAffected() == 0 {
					return err
				}
				_, err = r.commands.ApplyTx(ctx, tx, url, func(s *slashcmd.Set) error {
					s.SetStatic(defs)
					return nil
				})
				return err
			})
			if err != nil {
				return done, fmt.Errorf("entity: reconcile slash commands of %s: %w", url, err)
			}
			done++
		}
	}
	if done > 0 {
		r.log.Info("static slash commands reconciled", zap.String("type", t.Name), zap.Int("revision", t.Revision),
			zap.Int("entities", done), zap.Duration("took", time.Since(start)))
	}
	return done, nil
}

// ReconcileAll finishes reconciliations that an earlier process left unfinished.
func (r *Registry) ReconcileAll(ctx context.Context) error {
	types, err := r.Types(ctx)
	if err != nil {
		return err
	}
	for _, t := range types {
		if _, err := r.reconcileCommands(ctx, t); err != nil {
			return err
		}
	}
	return nil
}
