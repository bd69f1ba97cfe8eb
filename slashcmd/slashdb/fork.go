package slashdb

import (
	"context"
	"fmt"

	"github.com/entityd/entityd/streamdb"
)

// CopyForFork gives the fork at to the slash commands of the entity at from (static rows
// and dynamic layers as they are), inside the fork's transaction. The fork's collection
// stream is a Durable Streams fork of from's, made by the caller.
func CopyForFork(ctx context.Context, tx *streamdb.Tx, from, to string) error {
	if _, err := tx.Exec(ctx, sqlCopyCommands, from, to); err != nil {
		return fmt.Errorf("slashcmd: copy commands for fork: %w", err)
	}
	if _, err := tx.Exec(ctx, sqlCopyLayers, from, to); err != nil {
		return fmt.Errorf("slashcmd: copy command layers for fork: %w", err)
	}
	return nil
}
