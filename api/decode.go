package api

import (
	"errors"
	"io"
	"net/http"

	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/jsonbody"
)

// readBody reads a request body of at most limit bytes (413 beyond).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		return nil, bodyReadError(w, err, limit)
	}
	return data, nil
}

// bodyReadError answers a body that could not be read: too large (413), too slow (408,
// and the connection closed), or cut off (400).
func bodyReadError(w http.ResponseWriter, err error, limit int64) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return bodyTooLarge(limit)
	}
	if errBodyTimeout(err) {
		w.Header().Set("Connection", "close")
		return newError(http.StatusRequestTimeout, CodeRequestTimeout, "The request body did not arrive in time")
	}
	return newError(http.StatusBadRequest, CodeInvalidRequest, "Could not read the request body")
}

// readJSON reads a JSON object body. An empty body counts as {} (as in the reference).
//
// The body is read and parsed under a reservation of its size (bytes in flight, see
// budget): a client that announces a large body and trickles it holds its share, not the
// server's memory.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request) (*jsonbody.Body, error) {
	var h hold
	defer h.release()
	data, err := s.readBodyReserved(w, r, keyFor(r, ""), s.cfg.MaxBodyBytes, 1, &h)
	if err != nil {
		return nil, err
	}
	if err := httpx.RequireJSON(r, data); err != nil {
		return nil, err
	}
	return jsonbody.Parse(data)
}
