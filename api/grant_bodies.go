package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/entityd/entityd/authz"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/inflight"
	"github.com/entityd/entityd/internal/jsonbody"
	"github.com/entityd/entityd/internal/validation"
)

// newGrant reads the one grant a grant route makes and checks that the caller may make
// another (the grant quota).
func (s *Server) newGrant(w http.ResponseWriter, r *http.Request) (authz.GrantRequest, error) {
	g, err := s.decodeGrant(w, r)
	if err != nil {
		return g, err
	}
	return g, s.grantQuota(r.Context(), caller(r), 1)
}

// decodeGrant reads one grant request (unknown members refused).
func (s *Server) decodeGrant(w http.ResponseWriter, r *http.Request) (authz.GrantRequest, error) {
	var g authz.GrantRequest
	data, err := inflight.ReadAll(w, r, s.cfg.MaxBodyBytes)
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
		return g, jsonbody.SchemaMismatch(validation.One("/", "must be a grant: {subject_kind, subject_value, permission, propagation?, copy_to_children?, expires_at?}"))
	}
	return g, nil
}

// GrantsJSON is grants as the grant routes answer them.
func GrantsJSON(gs []*authz.Grant, forType bool) []map[string]any {
	out := make([]map[string]any, 0, len(gs))
	for _, g := range gs {
		out = append(out, g.JSON(forType))
	}
	return out
}

// GrantError answers an authz failure of a grant route.
func GrantError(err error) error {
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
