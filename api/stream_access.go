package api

import (
	"errors"
	"net/http"

	"github.com/entityd/entityd/authz"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/principal"
)

// streamAccess is the stream rule. An entity's streams (main and slash-command
// collection) are read with read permission on the entity and appended to with its
// write token (authorizeEntityWrite), never with a principal; a caller who may not read
// gets 403. Every other stream needs
// an authenticated principal (anyone in dev mode; root streams have no owner).
func (s *Server) streamAccess(r *http.Request, path string) (*http.Request, error) {
	typ, url, _, isEntity := entitypath.Parse(path)
	if isEntity {
		if _, err := s.registry.Type(r.Context(), typ); errors.Is(err, entity.ErrTypeNotFound) {
			isEntity = false // a plain stream whose path looks like an entity's
		} else if err != nil {
			return r, err
		}
	}
	if isEntity && r.Method == http.MethodPost {
		return r, nil // the write token decides
	}
	p, err := s.authenticate(r)
	if err != nil {
		return r, err
	}
	r = r.WithContext(principal.WithContext(r.Context(), p))
	if !isEntity || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		return r, nil
	}
	e, err := s.registry.Known(r.Context(), url)
	if errors.Is(err, entity.ErrNotFound) {
		return r, nil // the read answers 404
	}
	if err != nil {
		return r, err
	}
	ok, err := s.checker.Entity(r.Context(), p, e, authz.Read)
	if err != nil {
		return r, err
	}
	if !ok {
		// a known caller who may not read: 403, which Durable Streams clients do not
		// take for a credential to refresh (401 is for missing or bad credentials)
		return r, newError(http.StatusForbidden, CodeForbidden, "Principal is not allowed to read "+e.URL)
	}
	return r, nil
}
