package entityapi

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/authz"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/jsonbody"
	"github.com/entityd/entityd/internal/validation"
)

// The grant routes of §1.3/§1.4: list, add and revoke the grants of an entity
// (/_electric/entities/:type/:id/grants) or a type (/_electric/entity-types/:name/grants).
// All need manage (the rule table).

func (s *handlers) listEntityGrants(w http.ResponseWriter, r *http.Request) error {
	e, err := s.entityAt(r)
	if err != nil {
		return err
	}
	gs, err := s.grants.EntityGrants(r.Context(), e.URL)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, api.GrantsJSON(gs, false))
	return nil
}

func (s *handlers) addEntityGrant(w http.ResponseWriter, r *http.Request) error {
	e, err := s.entityAt(r)
	if err != nil {
		return err
	}
	g, err := s.kit.NewGrant(w, r)
	if err != nil {
		return err
	}
	out, err := s.grants.AddEntityGrant(r.Context(), e.URL, api.Caller(r), g)
	if err != nil {
		return api.GrantError(err)
	}
	httpx.WriteJSON(w, http.StatusCreated, out.JSON(false))
	return nil
}

func (s *handlers) revokeEntityGrant(w http.ResponseWriter, r *http.Request) error {
	e, err := s.entityAt(r)
	if err != nil {
		return err
	}
	if err := s.grants.RevokeEntityGrant(r.Context(), e.URL, api.Param(r, "grantId")); err != nil {
		return api.GrantError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *handlers) listTypeGrants(w http.ResponseWriter, r *http.Request) error {
	name, err := s.typeAt(r)
	if err != nil {
		return err
	}
	gs, err := s.grants.TypeGrants(r.Context(), name)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, api.GrantsJSON(gs, true))
	return nil
}

func (s *handlers) addTypeGrant(w http.ResponseWriter, r *http.Request) error {
	name, err := s.typeAt(r)
	if err != nil {
		return err
	}
	g, err := s.kit.NewGrant(w, r)
	if err != nil {
		return err
	}
	out, err := s.grants.AddTypeGrant(r.Context(), name, api.Caller(r), g)
	if err != nil {
		return api.GrantError(err)
	}
	httpx.WriteJSON(w, http.StatusCreated, out.JSON(true))
	return nil
}

func (s *handlers) revokeTypeGrant(w http.ResponseWriter, r *http.Request) error {
	name, err := s.typeAt(r)
	if err != nil {
		return err
	}
	if err := s.grants.RevokeTypeGrant(r.Context(), name, api.Param(r, "grantId")); err != nil {
		return api.GrantError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// typeAt is the {name} of a type route, 404 when there is no such type.
func (s *handlers) typeAt(r *http.Request) (string, error) {
	name := api.Param(r, "name")
	if _, err := s.registry.Type(r.Context(), name); err != nil {
		return "", typeError(err, name)
	}
	return name, nil
}

// spawnGrants reads the grants of a spawn body (nil when absent).
func spawnGrants(raw json.RawMessage) ([]authz.GrantRequest, error) {
	if raw == nil {
		return nil, nil
	}
	var gs []authz.GrantRequest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&gs); err != nil {
		return nil, jsonbody.SchemaMismatch(validation.One("/grants", "must be an array of grants"))
	}
	if err := authz.CheckEntityGrants(gs); err != nil {
		return nil, api.GrantError(err)
	}
	return gs, nil
}
