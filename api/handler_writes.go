package api

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/entityd/entityd/entity"
)

// checkHandlerWrite applies entity.CheckHandlerEvents to what a write token appends to
// the main stream of the entity at url: a handler writes its own events, never the
// server's (422 with the offending event otherwise).
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
