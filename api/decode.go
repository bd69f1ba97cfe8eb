package api

import (
	"net/http"

	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/inflight"
	"github.com/entityd/entityd/internal/jsonbody"
)

// readJSON reads a JSON object body. An empty body counts as {} (as in the reference).
//
// The body is read and parsed under a reservation of its size (bytes in flight, see
// budget): a client that announces a large body and trickles it holds its share, not the
// server's memory.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request) (*jsonbody.Body, error) {
	var h inflight.Hold
	defer h.Release()
	data, err := s.budget.ReadBody(w, r, inflight.KeyFor(r, ""), s.cfg.MaxBodyBytes, 1, &h)
	if err != nil {
		return nil, err
	}
	if err := httpx.RequireJSON(r, data); err != nil {
		return nil, err
	}
	return jsonbody.Parse(data)
}
