package runtime

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/entityd/entityd/internal/schemas"
	"github.com/entityd/entityd/slashcmd"
)

// An External answers a Context's questions through the server's HTTP API.
var _ Host = (*External)(nil)

// Schemas compiles state schemas in this process.
func (r *External) Schemas() *schemas.Cache { return r.schemas }

// entityStatus reads the status of the entity at url (ErrEntityNotFound when there is none).
func (r *External) entityStatus(ctx context.Context, url string) (string, error) {
	var e struct {
		Status string `json:"status"`
	}
	_, err := r.call(ctx, http.MethodGet, "/_electric/entities"+url, "", nil, &e)
	var api *APIError
	if errors.As(err, &api) && api.Status == http.StatusNotFound {
		return "", ErrEntityNotFound
	}
	return e.Status, err
}

// acceptsWrites reports whether an entity of status takes messages (not stopping, and not
// ended).
func acceptsWrites(status string) bool {
	return status != "stopping" && status != "stopped" && status != "killed"
}

// CheckSend checks that the target exists and accepts messages; the server checks the
// message against the target's schemas when the wake commits.
func (r *External) CheckSend(ctx context.Context, _ string, s *Send) error {
	status, err := r.entityStatus(ctx, s.To)
	if err != nil {
		return fmt.Errorf("runtime: send to %s: %w", s.To, err)
	}
	if !acceptsWrites(status) {
		return fmt.Errorf("runtime: send to %s: %w", s.To, ErrNotRunning)
	}
	return nil
}

// CheckEntity reports whether the entity at url exists.
func (r *External) CheckEntity(ctx context.Context, url string) error {
	_, err := r.entityStatus(ctx, url)
	return err
}

// LoadCommands builds the entity's command set from its effective rows (each with its
// dynamic layers) and the definition's static commands. The changes a run makes are
// replayed by the server against the stored layers when the wake commits.
func (r *External) LoadCommands(ctx context.Context, url string, def *EntityDefinition) (*slashcmd.Set, error) {
	var rows []slashcmd.Row
	if _, err := r.call(ctx, http.MethodGet, "/_electric/entities"+url+"/slash-commands", "", nil, &rows); err != nil {
		return nil, err
	}
	statics := map[string]*slashcmd.Definition{}
	for i := range def.SlashCommands {
		statics[def.SlashCommands[i].Name] = &def.SlashCommands[i]
	}
	entries := make([]*slashcmd.Entry, 0, len(rows))
	for i := range rows {
		row := rows[i]
		entries = append(entries, &slashcmd.Entry{Name: row.Name, Static: statics[row.Name], Layers: row.DynamicLayers, Row: &row})
	}
	return slashcmd.NewSet(entries, slashcmd.DefaultLimits, time.Now()), nil
}
