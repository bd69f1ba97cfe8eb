package api

import (
	"errors"
	"net/http"

	"github.com/entityd/entityd/api/dsapi"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/streamdb"
)

// Grants on plain streams: /_electric/stream-grants?stream=<path> lists (GET) and adds
// (POST) the grants of the stream at path, /_electric/stream-grants/:grantId?stream=<path>
// revokes one (DELETE). They need manage on the stream, which its owner has; the
// stream's access decision (decideStream) answers.

func (s *Server) listStreamGrants(w http.ResponseWriter, r *http.Request) error {
	id, r, err := s.streamToManage(r)
	if err != nil {
		return err
	}
	gs, err := s.grants.StreamGrants(r.Context(), id.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, GrantsJSON(gs, true))
	return nil
}

func (s *Server) addStreamGrant(w http.ResponseWriter, r *http.Request) error {
	id, r, err := s.streamToManage(r)
	if err != nil {
		return err
	}
	g, err := s.newGrant(w, r)
	if err != nil {
		return err
	}
	out, err := s.grants.AddStreamGrant(r.Context(), id.ID, caller(r), g)
	if err != nil {
		return GrantError(err)
	}
	writeJSON(w, http.StatusCreated, out.JSON(true))
	return nil
}

func (s *Server) revokeStreamGrant(w http.ResponseWriter, r *http.Request) error {
	id, r, err := s.streamToManage(r)
	if err != nil {
		return err
	}
	if err := s.grants.RevokeStreamGrant(r.Context(), id.ID, param(r, "grantId")); err != nil {
		return GrantError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// streamToManage is the stream the ?stream= parameter names, for a caller who may
// manage it.
func (s *Server) streamToManage(r *http.Request) (streamdb.Identity, *http.Request, error) {
	path := r.URL.Query().Get("stream")
	if path == "" {
		return streamdb.Identity{}, r, httpx.BadRequest("Name the stream: ?stream=<path>")
	}
	path = dsapi.StreamPath(path)
	id, err := s.streams.Identify(r.Context(), path)
	if errors.Is(err, streamdb.ErrNotFound) || errors.Is(err, streamdb.ErrGone) {
		return id, r, newError(http.StatusNotFound, dsapi.CodeStreamNotFound, "Stream not found")
	}
	if err != nil {
		return id, r, err
	}
	r, err = s.decideStream(r, id, path, dsapi.OpManage)
	return id, r, err
}
