package api

import (
	"errors"
	"net/http"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/textpolicy"
)

// Tag limits: keys are identifiers, values short text (both kept in a jsonb column).
const (
	maxTagKeyLength   = 256
	maxTagValueLength = 4096
)

// setTag is POST /_electric/entities/:type/:id/tags/:tagKey {"value": string}: set a tag;
// answers the public entity with txid.
func (s *Server) setTag(w http.ResponseWriter, r *http.Request) error {
	e, key, err := s.tagTarget(r)
	if err != nil {
		return err
	}
	b, err := s.readJSON(w, r)
	if err != nil {
		return err
	}
	value, ok := b.Text("value")
	if !ok && !b.Has("value") {
		b.Details.Add("/value", "must be string")
	}
	b.MaxLen("value", value, maxTagValueLength)
	if err := b.Fail(); err != nil {
		return err
	}
	res, err := s.registry.SetTag(r.Context(), e.URL, key, value)
	return s.writeTagResult(w, res, err)
}

// deleteTag is DELETE /_electric/entities/:type/:id/tags/:tagKey.
func (s *Server) deleteTag(w http.ResponseWriter, r *http.Request) error {
	e, key, err := s.tagTarget(r)
	if err != nil {
		return err
	}
	res, err := s.registry.DeleteTag(r.Context(), e.URL, key)
	return s.writeTagResult(w, res, err)
}

func (s *Server) tagTarget(r *http.Request) (*entity.Entity, string, error) {
	e, err := s.entityAt(r)
	if err != nil {
		return nil, "", err
	}
	key := param(r, "tagKey")
	if key == "" || len(key) > maxTagKeyLength || !textpolicy.Valid(key, textpolicy.Name) {
		return nil, "", newError(http.StatusBadRequest, CodeInvalidRequest,
			"Tag keys must be 1-256 bytes of UTF-8 without control characters")
	}
	return e, key, nil
}

func (s *Server) writeTagResult(w http.ResponseWriter, res *entity.TagResult, err error) error {
	switch {
	case errors.Is(err, entity.ErrNotRunning):
		return newError(http.StatusConflict, CodeNotRunning, "Entity is not accepting writes")
	case errors.Is(err, entity.ErrNotFound):
		return newError(http.StatusNotFound, CodeNotFound, "Entity not found")
	case errors.Is(err, entity.ErrTooManyTags):
		return s.tooManyTags()
	case err != nil:
		return err
	}
	o := res.Entity.JSONObject()
	o.Int("txid", res.Txid)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(o.Bytes())
	return err
}
