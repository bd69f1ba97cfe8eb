package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/entityd/entityd/authz"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/jsonbody"
	"github.com/entityd/entityd/internal/validation"
)

// The grant routes of §1.3/§1.4: list, add and revoke the grants of an entity
// (/_electric/entities/:type/:id/grants) or a type (/_electric/entity-types/:name/grants).
// All need manage (the rule table).

func (s *Server) listEntityGrants(w http.ResponseWriter, r *http.Request) error {
	e, err := s.entityAt(r)
	if err != nil {
		return err
	}
	gs, err := s.grants.EntityGrants(r.Context(), e.URL)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, grantsJSON(gs, false))
	return nil
}

func (s *Server) addEntityGrant(w http.ResponseWriter, r *http.Request) error {
	e, err := s.entityAt(r)
	if err != nil {
		return err
	}
	g, err := s.decodeGrant(w, r)
	if err != nil {
		return err
	}
	if err := s.quotas.grant(r.Context(), caller(r)); err != nil {
		return err
	}
	out, err := s.grants.AddEntityGrant(r.Context(), e.URL, caller(r), g)
	if err != nil {
		return grantError(err)
	}
	writeJSON(w, http.StatusCreated, out.JSON(false))
	return nil
}

func (s *Server) revokeEntityGrant(w http.ResponseWriter, r *http.Request) error {
	e, err := s.entityAt(r)
	if err != nil {
		return err
	}
	if err := s.grants.RevokeEntityGrant(r.Context(), e.URL, param(r, "grantId")); err != nil {
		return grantError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) listTypeGrants(w http.ResponseWriter, r *http.Request) error {
	name, err := s.typeAt(r)
	if err != nil {
		return err
	}
	gs, err := s.grants.TypeGrants(r.Context(), name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, grantsJSON(gs, true))
	return nil
}

func (s *Server) addTypeGrant(w http.ResponseWriter, r *http.Request) error {
	name, err := s.typeAt(r)
	if err != nil {
		return err
	}
	g, err := s.decodeGrant(w, r)
	if err != nil {
		return err
	}
	if err := s.quotas.grant(r.Context(), caller(r)); err != nil {
		return err
	}
	out, err := s.grants.AddTypeGrant(r.Context(), name, caller(r), g)
	if err != nil {
		return grantError(err)
	}
	writeJSON(w, http.StatusCreated, out.JSON(true))
	return nil
}

func (s *Server) revokeTypeGrant(w http.ResponseWriter, r *http.Request) error {
	name, err := s.typeAt(r)
	if err != nil {
		return err
	}
	if err := s.grants.RevokeTypeGrant(r.Context(), name, param(r, "grantId")); err != nil {
		return grantError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// typeAt is the {name} of a type route, 404 when there is no such type.
func (s *Server) typeAt(r *http.Request) (string, error) {
	name := param(r, "name")
	if _, err := s.registry.Type(r.Context(), name); err != nil {
		return "", typeError(err, name)
	}
	return name, nil
}

// decodeGrant reads one grant request (unknown members refused).
func (s *Server) decodeGrant(w http.ResponseWriter, r *http.Request) (authz.GrantRequest, error) {
	var g authz.GrantRequest
	data, err := readBody(w, r, s.cfg.MaxBodyBytes)
	if err != nil {
		return g, err
	}
	if err := httpx.RequireJSON(r, data); err != nil {
		return g, err
	}
	if _, err := jsonbody.Parse(data); err != nil {
		return g, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		return g, jsonbody.SchemaMismatch(validationDetails("/", "must be a grant: {subject_kind, subject_value, permission, propagation?, copy_to_children?, expires_at?}"))
	}
	return g, nil
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
		return nil, jsonbody.SchemaMismatch(validationDetails("/grants", "must be an array of grants"))
	}
	if err := authz.CheckEntityGrants(gs); err != nil {
		return nil, grantError(err)
	}
	return gs, nil
}

func grantsJSON(gs []*authz.Grant, forType bool) []map[string]any {
	out := make([]map[string]any, 0, len(gs))
	for _, g := range gs {
		out = append(out, g.JSON(forType))
	}
	return out
}

func grantError(err error) error {
	var ie *authz.InvalidError
	switch {
	case errors.As(err, &ie):
		return newError(http.StatusUnprocessableEntity, CodeSchemaValidationFailed, "Invalid grant").
			WithDetails(validation.Details{{Path: ie.Path, Message: ie.Message}})
	case errors.Is(err, authz.ErrGrantNotFound):
		return newError(http.StatusNotFound, CodeNotFound, "Grant not found")
	case errors.Is(err, authz.ErrTooManyGrants):
		return newError(http.StatusConflict, "TOO_MANY_GRANTS", "At most 256 grants per entity or type")
	}
	return err
}
