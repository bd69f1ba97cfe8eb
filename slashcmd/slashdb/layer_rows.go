package slashdb

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/entityd/entityd/slashcmd"
	"github.com/entityd/entityd/streamdb"
)

// Layers live one row per (entity, name, owner) in slash_command_layers, so that an
// owner's registration writes that owner's layer and not the whole stack of every
// owner (which made writes grow with the number of owners: quadratic over a session).

// encodeLayer is the stored form of a layer (its JSON, as clients see it).
func encodeLayer(l slashcmd.Layer) ([]byte, error) { return json.Marshal(l) }

// loadLayers reads the layers of every name of the entity, bottom first, into entries
// (creating none: a name with layers always has its row in slash_commands).
func loadLayers(ctx context.Context, tx querier, entityURL string, entries map[string]*slashcmd.Entry) error {
	rows, err := tx.Query(ctx, sqlSelectLayers, entityURL)
	if err != nil {
		return fmt.Errorf("slashcmd: load layers: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, encoded string
		var pos int64
		if err := rows.Scan(&name, &pos, &encoded); err != nil {
			return err
		}
		e := entries[name]
		if e == nil {
			continue // cannot happen: layers are written with their row
		}
		var l slashcmd.Layer
		if err := json.Unmarshal([]byte(encoded), &l); err != nil {
			return fmt.Errorf("slashcmd: layer %s/%s: %w", entityURL, name, err)
		}
		l.Position = pos
		e.Layers = append(e.Layers, l)
		if e.Stored == nil {
			e.Stored = map[string]slashcmd.StoredLayer{}
		}
		// Compare later writes with this code's encoding, not the stored text: layers
		// moved by migration 010 are jsonb's rendering (other key order and spacing), and
		// comparing with that would rewrite every one of them on the next change.
		canonical, err := encodeLayer(l)
		if err != nil {
			return err
		}
		e.Stored[l.Owner] = slashcmd.StoredLayer{Position: pos, Encoded: string(canonical)}
	}
	return rows.Err()
}

// persistLayers writes what changed in e's layers since they were loaded: deletes the
// layers of owners that are gone, upserts those that are new, moved or different.
func persistLayers(ctx context.Context, tx *streamdb.Tx, entityURL string, e *slashcmd.Entry) error {
	current := make(map[string]bool, len(e.Layers))
	for _, l := range e.Layers {
		current[l.Owner] = true
		enc, err := encodeLayer(l)
		if err != nil {
			return err
		}
		if old, ok := e.Stored[l.Owner]; ok && old.Position == l.Position && old.Encoded == string(enc) {
			continue
		}
		if _, err := tx.Exec(ctx, sqlUpsertLayers,
			entityURL, e.Name, l.Owner, l.Position, enc); err != nil {
			return fmt.Errorf("slashcmd: write layer: %w", err)
		}
	}
	var gone []string
	for owner := range e.Stored {
		if !current[owner] {
			gone = append(gone, owner)
		}
	}
	if len(gone) > 0 {
		if _, err := tx.Exec(ctx, sqlDeleteLayers,
			entityURL, e.Name, gone); err != nil {
			return fmt.Errorf("slashcmd: remove layers: %w", err)
		}
	}
	return nil
}
