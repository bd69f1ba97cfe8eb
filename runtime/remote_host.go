package runtime

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/internal/schemas"
	"github.com/entityd/entityd/slashcmd"
)

// A Remote answers a Context's questions through the server's HTTP API.
var _ host = (*Remote)(nil)

func (r *Remote) schemaCache() *schemas.Cache { return r.schemas }

// entity reads the entity at url (entity.ErrNotFound when there is none).
func (r *Remote) entity(ctx context.Context, url string) (*entity.Entity, error) {
	var e struct {
		Status entity.Status `json:"status"`
		Type   string        `json:"type"`
	}
	_, err := r.call(ctx, http.MethodGet, "/_electric/entities"+url, "", nil, &e)
	var api *APIError
	if errors.As(err, &api) && api.Status == http.StatusNotFound {
		return nil, entity.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return &entity.Entity{URL: url, Type: e.Type, Status: e.Status}, nil
}

// prepareSend checks that the target exists and accepts messages; the server checks the
// message against the target's schemas when the wake commits.
func (r *Remote) prepareSend(ctx context.Context, url string, req *inbox.SendRequest) (pendingSend, error) {
	target, err := r.entity(ctx, url)
	if err != nil {
		return pendingSend{}, fmt.Errorf("runtime: send to %s: %w", url, err)
	}
	if !target.Status.AcceptsWrites() {
		return pendingSend{}, fmt.Errorf("runtime: send to %s: %w", url, entity.ErrNotRunning)
	}
	return pendingSend{url: url, req: req}, nil
}

func (r *Remote) checkEntity(ctx context.Context, url string) error {
	_, err := r.entity(ctx, url)
	return err
}

// loadCommands builds the entity's command set from its effective rows (each with its
// dynamic layers) and the definition's static commands. The changes a run makes are
// replayed by the server against the stored layers when the wake commits.
func (r *Remote) loadCommands(ctx context.Context, url string, def *EntityDefinition) (*slashcmd.Set, error) {
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
