package entityapi

import (
	"net/http"

	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/wake"
)

// wakeStatus is GET /_electric/entities/:type/:id/wake: where delivery to the entity's
// handler stands — how far its stream has been handled, retries, and the messages that
// were given up on.
func (s *handlers) wakeStatus(w http.ResponseWriter, r *http.Request) error {
	e, err := s.entityAt(r)
	if err != nil {
		return err
	}
	st, err := wake.StatusOf(r.Context(), s.streams.DB(), e.URL)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, st)
	return nil
}
