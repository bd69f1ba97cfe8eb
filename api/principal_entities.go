package api

import (
	"errors"
	"net/http"

	"github.com/entityd/entityd/api/dsapi"
	"github.com/entityd/entityd/authz"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/principal"
)

// principalEntity is the principal entity a route names by its key (id, "kind:id") when
// it does not exist yet. Electric's server creates it on first use, for whoever asks;
// here only the principal itself (or a privileged one) brings its entity into being, and
// anyone else gets the refusal they would get if it existed, so that a principal cannot
// learn whether another has used the server.
func (s *Server) principalEntity(r *http.Request, caller principal.Principal, id string, perm authz.Permission) (*entity.Entity, error) {
	named, ok := principal.Parse(id)
	if !ok {
		return nil, newError(http.StatusBadRequest, CodeInvalidRequest,
			"Invalid principal key: principal entities are /principal/<kind:id>, with kind user, agent, service or system")
	}
	if named != caller && !s.checker.Privileged(caller) {
		return nil, s.denied(perm, named.URL())
	}
	if !entity.Materializable(named) {
		return nil, newError(http.StatusBadRequest, CodeInvalidRequest, "A principal whose id contains '/' has no principal entity")
	}
	return s.registry.EnsurePrincipal(r.Context(), named)
}

// missingPrincipalStream is streamPolicy.Missing: a principal entity's streams exist
// once the principal has used the server, so for a path with none yet a caller gets
// the answer it gets when they exist — append or close: the write token's 401, whoever
// asks; read: 403 and delete: 405 for callers other than that principal (or a
// privileged one) — and never learns which it is.
func (s *Server) missingPrincipalStream(r *http.Request, path string, op dsapi.Op) error {
	typ, url, _, ok := entitypath.Parse(path)
	if !ok || typ != entitypath.PrincipalType {
		return nil
	}
	named, ok := principal.ParseURL(url)
	if !ok {
		return nil
	}
	if op == dsapi.OpWrite || op == dsapi.OpClose {
		// whoever asks: no write token of a principal entity is ever handed out
		if WriteToken(r) == "" {
			return newError(http.StatusUnauthorized, CodeUnauthorized,
				"Missing write token: appending to an entity stream needs Authorization: Bearer <X-Write-Token from spawn>")
		}
		return newError(http.StatusUnauthorized, CodeUnauthorized, "Invalid write token")
	}
	c := caller(r)
	if named == c || s.checker.Privileged(c) {
		return nil
	}
	switch op {
	case dsapi.OpRead:
		return newError(http.StatusForbidden, CodeForbidden, "Principal is not allowed to read "+url)
	case dsapi.OpDelete:
		return newError(http.StatusMethodNotAllowed, CodeMethodNotAllowed,
			"Entity streams are closed by killing the entity (DELETE /_electric/entities/:type/:id)")
	}
	return nil
}

// namedPrincipalEntity is the principal entity at url when url is one (Electric's spelling,
// /principal/user%3Aada) and it does not exist yet, for a route that names an entity in
// its body or headers (a spawn's parent, a wake's subscriber or source, a future send's
// target, a shared state's owner): made when the caller is that principal or privileged;
// for anyone else a stand-in with no grants, which the route's own permission check then
// refuses exactly as it refuses the entity once it exists. ok is false when url is no
// principal entity's.
func (s *Server) namedPrincipalEntity(r *http.Request, url string) (e *entity.Entity, ok bool, err error) {
	named, isPrincipal := principal.ParseURL(url)
	if !isPrincipal || named.URL() != url || !entity.Materializable(named) {
		return nil, false, nil
	}
	c := caller(r)
	if named == c || s.checker.Privileged(c) {
		e, err := s.registry.EnsurePrincipal(r.Context(), named)
		return e, true, err
	}
	return &entity.Entity{URL: url, Type: entitypath.PrincipalType, InstanceID: named.String(), CreatedBy: &url}, true, nil
}

// namedEntity is Kit.NamedEntity.
func (s *Server) namedEntity(r *http.Request, url string) (*entity.Entity, error) {
	e, err := s.registry.Known(r.Context(), url)
	if !errors.Is(err, entity.ErrNotFound) {
		return e, err
	}
	pe, ok, perr := s.namedPrincipalEntity(r, url)
	if !ok {
		return nil, err
	}
	return pe, perr
}
