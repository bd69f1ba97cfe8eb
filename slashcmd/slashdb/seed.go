package slashdb

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/slashcmd"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wire"
)

// StaticEvents returns one slash_command insert per static definition, all stamped at.
// Spawn puts them in the entity's main stream right after entity_created.
func StaticEvents(defs []slashcmd.Definition, at time.Time) [][]byte {
	events := make([][]byte, len(defs))
	for i, d := range defs {
		events[i] = slashcmd.StaticRow(d, at).Event(wire.OpInsert, "", at)
	}
	return events
}

// SeedStatic sets up the slash commands of a newly spawned entity inside the spawn's
// transaction: it creates the entity's collection stream holding events (the same
// inserts as the main stream), and records the static rows in the slash_commands table.
func SeedStatic(ctx context.Context, tx *streamdb.Tx, entityURL string, defs []slashcmd.Definition, events [][]byte, at time.Time) error {
	_, created, err := tx.Create(ctx, entitypath.Collection(entityURL), streamdb.CreateConfig{ContentType: "application/json",
		Access: streamdb.Access{Kind: streamdb.AccessEntity, Entity: entityURL}}, events)
	if err != nil {
		return fmt.Errorf("slashcmd: create collection stream: %w", err)
	}
	if !created {
		return fmt.Errorf("slashcmd: collection stream of %s already exists", entityURL)
	}
	if len(defs) == 0 {
		return nil
	}
	names := make([]string, len(defs))
	descs := make([]*string, len(defs))
	args := make([][]byte, len(defs))
	statics := make([][]byte, len(defs))
	for i, d := range defs {
		names[i], descs[i] = d.Name, d.Description
		if d.Arguments != nil {
			a, err := json.Marshal(d.Arguments)
			if err != nil {
				return err
			}
			args[i] = a
		}
		s, err := slashcmd.StaticJSON(d)
		if err != nil {
			return err
		}
		statics[i] = s
	}
	_, err = tx.Exec(ctx, sqlSeedStatic,
		entityURL, at, names, descs, args, statics)
	if err != nil {
		return fmt.Errorf("slashcmd: seed static commands: %w", err)
	}
	return nil
}
