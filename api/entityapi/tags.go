package entityapi

import (
	"errors"
	"net/http"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/textpolicy"
)

// Tag limits: keys are identifiers, values short text (both kept in a jsonb column).
const (
	maxTagKeyLength   = 256
	maxTagValueLength = 4096
)

// setTag is POST /_electric/entities/:type/:id/tags/:tagKey {"value": string}: set a tag;
// answers the public entity with txid.
func (s *handlers) setTag(w http.ResponseWriter, r *http.Request) error {
	e, key, err := s.tagTarget(r)
	if err != nil {
		return err
	}
	b, err := s.kit.ReadJSON(w, r)
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
func (s *handlers) deleteTag(w http.ResponseWriter, r *http.Request) error {
	e, key, err := s.tagTarget(r)
	if err != nil {
		return err
	}
	res, err := s.registry.DeleteTag(r.Context(), e.URL, key)
	return s.writeTagResult(w, res, err)
}

func (s *handlers) tagTarget(r *http.Request) (*entity.Entity, string, error) {
	e, err := s.entityAt(r)
	if err != nil {
		return nil, "", err
	}
	if err := refusePrincipalMutation(e, "tagged"); err != nil {
		return nil, "", err
	}
	key := api.Param(r, "tagKey")
	if key == "" || len(key) > maxTagKeyLength || !textpolicy.Valid(key, textpolicy.Name) {
		return nil, "", httpx.New(http.StatusBadRequest, api.CodeInvalidRequest,
			"Tag keys must be 1-256 bytes of UTF-8 without control characters")
	}
	return e, key, nil
}

func (s *handlers) writeTagResult(w http.ResponseWriter, res *entity.TagResult, err error) error {
	switch {
	case errors.Is(err, entity.ErrNotRunning):
		return httpx.New(http.StatusConflict, api.CodeNotRunning, "Entity is not accepting writes")
	case errors.Is(err, entity.ErrNotFound):
		return httpx.New(http.StatusNotFound, api.CodeNotFound, "Entity not found")
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
