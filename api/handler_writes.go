package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/validation"
)

// checkHandlerWrite applies entity.CheckHandlerEvents to what a write token appends to
// the main stream of the entity at url: a handler writes its own events, never the
// server's (422 with the offending event otherwise); then the entity's state schemas,
// when it has any (entity.CheckStateEvents): 422 UNKNOWN_EVENT_TYPE for an event type
// they do not declare, 422 SCHEMA_VALIDATION_FAILED with the validator's details for a
// value that does not match.
func (s *Server) checkHandlerWrite(r *http.Request, url string, msgs [][]byte) error {
	e, err := s.registry.Known(r.Context(), url)
	if err != nil {
		return err
	}
	err = entity.CheckHandlerEvents(url, msgs, s.eventOriginals(r, e))
	var hw *entity.HandlerWriteError
	if errors.As(err, &hw) {
		return newError(http.StatusUnprocessableEntity, CodeInvalidRequest, "A write token writes the handler's own events: "+hw.Error())
	}
	if err != nil {
		return err
	}
	t, err := s.registry.Type(r.Context(), e.Type)
	if errors.Is(err, entity.ErrTypeNotFound) {
		t, err = nil, nil // a deleted type's entities keep the schemas they were spawned with
	}
	if err != nil {
		return err
	}
	err = s.registry.CheckStateEvents(e, t, msgs)
	if se, ok := entity.AsStateEventError(err); ok {
		if se.Unknown() {
			return newError(http.StatusUnprocessableEntity, CodeUnknownEventType, se.Error()).
				WithDetails(validation.One(fmt.Sprintf("/%d/type", se.Index), "must be an event type the entity type's state_schemas declare"))
		}
		return newError(http.StatusUnprocessableEntity, CodeSchemaValidationFailed, se.Error()).WithDetails(se.Details)
	}
	if errors.As(err, &hw) {
		return newError(http.StatusUnprocessableEntity, CodeInvalidRequest, "A write token writes the handler's own events: "+hw.Error())
	}
	return err
}

// eventOriginals finds the newest version of an event on e's main stream, for the
// updates of server events a handler may write.
func (s *Server) eventOriginals(r *http.Request, e *entity.Entity) entity.Originals {
	return func(typ, key string) (json.RawMessage, bool, error) {
		data, ok, err := s.streams.LastEvent(r.Context(), e.StreamID, typ, key)
		if err != nil || !ok {
			return nil, ok, err
		}
		var ev struct {
			Value json.RawMessage `json:"value"`
		}
		_ = json.Unmarshal(data, &ev)
		return ev.Value, true, nil
	}
}
