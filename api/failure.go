package api

import (
	"errors"
	"net/http"

	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/dberr"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/streamdb"
)

// CodeServiceUnavailable is the code of a 503: the database cannot be reached right now.
const CodeServiceUnavailable = httpx.CodeServiceUnavailable

// retryAfterSeconds is the Retry-After of a 503. The server reconnects on its own, and
// a restarted Postgres is usually back within seconds.
const retryAfterSeconds = "1"

// statusClientClosed is recorded (never seen by anyone) for a request whose client went
// away before it was answered, so that it counts neither as a success nor as a 500.
const statusClientClosed = 499

// writeFailure answers a handler's error: an *Error as its envelope; the database being
// unreachable as 503 + Retry-After (logged once per outage, not per request); a value the
// database refused as the client's 400; a client that went away as nothing; anything else
// as a logged 500 that reveals nothing.
func (s *Server) writeFailure(w http.ResponseWriter, r *http.Request, err error) {
	var apiErr *Error
	var ch *challenged
	var rt *retryable
	switch {
	case errors.As(err, &ch):
		if ch.challenge != "" {
			w.Header().Set("WWW-Authenticate", ch.challenge)
		}
		writeError(w, ch.e)
	case errors.As(err, &rt):
		w.Header().Set("Retry-After", retryAfterSeconds)
		writeError(w, rt.e)
	case errors.As(err, &apiErr):
		writeError(w, apiErr)
	case r.Context().Err() != nil && errors.Is(err, r.Context().Err()):
		w.WriteHeader(statusClientClosed)
	case dberr.Unavailable(err):
		s.outage.failed(err)
		w.Header().Set("Retry-After", retryAfterSeconds)
		writeError(w, newError(http.StatusServiceUnavailable, CodeServiceUnavailable,
			"The database is unavailable; retry shortly"))
	case errors.Is(err, streamdb.ErrClosed):
		w.Header().Set("Retry-After", retryAfterSeconds)
		writeError(w, newError(http.StatusServiceUnavailable, CodeServerStopping, "The server is shutting down"))
	case dberr.Refused(err):
		// Every input is checked at the door; this is the last line, and it is the
		// request's own doing, so it gets a 4xx and fails alone.
		s.log.Warn("database refused a value in a request", zap.String("request_id", requestIDFrom(r.Context())),
			zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.String("sqlstate", dberr.Code(err)), zap.Error(err))
		writeError(w, newError(http.StatusBadRequest, CodeInvalidRequest, "A value in the request cannot be stored"))
	default:
		s.log.Error("request failed", zap.String("request_id", requestIDFrom(r.Context())),
			zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.Error(err))
		writeError(w, newError(http.StatusInternalServerError, CodeInternal, "Internal server error"))
	}
}
