package entity

import (
	"context"
	"encoding/json"

	"github.com/entityd/entityd/internal/entitypath"
)

// ManifestAt is the manifest collection of the entity at url as its main stream had it
// after message upto (the rows by key; a deleted entry is absent). A fork uses it to
// carry along only what its copy's stream names at the fork point: an attachment
// uploaded after the pointer stays with the source.
func (r *Registry) ManifestAt(ctx context.Context, url string, upto int64) (map[string]json.RawMessage, error) {
	m, err := r.streams.Lookup(ctx, entitypath.Main(url))
	if err != nil {
		return nil, err
	}
	st, err := r.collectState(ctx, m, upto, "manifest")
	if err != nil {
		return nil, err
	}
	return st["manifest"], nil
}
