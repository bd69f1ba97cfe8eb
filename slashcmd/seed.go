package slashcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/entityd/entityd/streamdb"
)

// SeedStatic records the static commands of a newly spawned entity in the effective-rows
// table. The matching slash_command insert events are part of the stream's initial
// messages, written by the same transaction.
func SeedStatic(ctx context.Context, tx *streamdb.Tx, entityURL string, defs []Definition, at time.Time) error {
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
		s, err := json.Marshal(d)
		if err != nil {
			return err
		}
		statics[i] = s
	}
	_, err := tx.Exec(ctx, `INSERT INTO slash_commands (entity_url, name, description, arguments, source, updated_at, static_def)
		SELECT $1, u.name, u.description, u.arguments, 'static', $2, u.static_def
		FROM unnest($3::text[], $4::text[], $5::jsonb[], $6::jsonb[]) AS u(name, description, arguments, static_def)`,
		entityURL, at, names, descs, args, statics)
	if err != nil {
		return fmt.Errorf("slashcmd: seed static commands: %w", err)
	}
	return nil
}
