package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/textpolicy"
	"github.com/entityd/entityd/streamdb"
)

// Durable Streams error codes (the protocol fixes the statuses; the codes are ours).
const (
	CodeStreamNotFound     = "STREAM_NOT_FOUND"
	CodeStreamGone         = "STREAM_GONE"
	CodeStreamExists       = "STREAM_EXISTS"
	CodeStreamClosed       = "STREAM_CLOSED"
	CodeContentTypeMismach = "CONTENT_TYPE_MISMATCH"
	CodeSequenceConflict   = "SEQUENCE_CONFLICT"
	CodeProducerFenced     = "PRODUCER_STALE_EPOCH"
	CodeProducerSeqGap     = "PRODUCER_SEQUENCE_GAP"
)

// StreamAlias is the base path of the Durable Streams reference server: /v1/stream/<p>
// is another name of the stream /<p>, kept for clients configured with it.
const StreamAlias = "/v1/stream"

// ReservedPrefixes are the root paths that are not streams: entityd's own API and the
// Durable Streams control routes.
var ReservedPrefixes = []string{"/_electric", "/__ds"}

// streamPath is the stream a request path names: the path itself, or for the alias the
// path after it.
func streamPath(urlPath string) string {
	if rest, ok := strings.CutPrefix(urlPath, StreamAlias+"/"); ok {
		return "/" + rest
	}
	return urlPath
}

// streamRoutes serves the Durable Streams protocol at every path outside the reserved
// prefixes (and under the /v1/stream alias) with one implementation. Who may do what to
// a stream is decided by decideStream from what is recorded about the stream; the
// handlers below ask it before they touch a stream's bytes.
func (s *Server) streamRoutes() http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		path := streamPath(r.URL.Path)
		if path == "/" {
			if s.home != "" && (r.Method == http.MethodGet || r.Method == http.MethodHead) && wantsHTML(r) {
				// A browser opening the server's address lands on the console.
				http.Redirect(w, r, s.home, http.StatusFound)
				return nil
			}
			return newError(http.StatusNotFound, CodeStreamNotFound, "A stream path needs a name")
		}
		return s.serveStream(w, r, path)
	})
}

// serveStream answers one Durable Streams request on the stream at path.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request, path string) error {
	if len(path) > s.cfg.MaxStreamPathBytes {
		return badRequest(fmt.Sprintf("Stream paths must be at most %d bytes", s.cfg.MaxStreamPathBytes))
	}
	switch r.Method {
	case http.MethodGet:
		return s.readStream(w, r, path)
	case http.MethodHead:
		return s.headStream(w, r, path)
	case http.MethodPost:
		return s.appendStream(w, r, path)
	case http.MethodPut:
		return s.createStream(w, r, path)
	case http.MethodDelete:
		return s.deleteStream(w, r, path)
	}
	w.Header().Set("Allow", "GET, HEAD, POST, PUT, DELETE, OPTIONS")
	return newError(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "Method "+r.Method+" is not allowed on streams")
}

// checkNewStreamPath applies the stream path rules (internal/textpolicy.CheckPath) and
// the reserved paths to a stream being created: existing streams stay readable and
// deletable whatever their name.
func (s *Server) checkNewStreamPath(r *http.Request, path string) error {
	if textpolicy.HasEncodedSlash(r.URL.EscapedPath()) {
		return badRequest("Stream paths must not contain an encoded slash (%2F)")
	}
	if p := textpolicy.CheckPath(path, s.cfg.MaxStreamPathBytes); p != "" {
		return badRequest("The stream path " + p)
	}
	if isSharedStatePath(path) {
		return nil // created under its own rule (decideSharedState)
	}
	return reservedStreamPath(path)
}

// SharedStatePrefix is where the runtime's shared state (ctx.mkdb, db()) lives: one
// stream per id, /_electric/shared-state/<id>.
const SharedStatePrefix = "/_electric/shared-state/"

// isSharedStatePath reports whether path is one shared state's stream.
func isSharedStatePath(path string) bool {
	id, ok := strings.CutPrefix(path, SharedStatePrefix)
	return ok && id != "" && !strings.Contains(id, "/")
}

// sharedStateRoutes serves the Durable Streams protocol for shared state, under the
// reserved /_electric prefix, with the handlers of every stream.
func (s *Server) sharedStateRoutes() http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		path := r.URL.Path
		if !isSharedStatePath(path) {
			return newError(http.StatusNotFound, CodeNotFound, "No route for "+r.Method+" "+path)
		}
		return s.serveStream(w, r, path)
	})
}

// authorizeEntityWrite guards direct appends to an entity's stream: only a holder of
// the entity's write token (Authorization: Bearer, or Electric-Claim-Token) may append.
func (s *Server) authorizeEntityWrite(r *http.Request, entityURL string) error {
	token := WriteToken(r)
	if token == "" {
		return newError(http.StatusUnauthorized, CodeUnauthorized,
			"Missing write token: appending to an entity stream needs Authorization: Bearer <X-Write-Token from spawn>")
	}
	e, err := s.registry.Known(r.Context(), entityURL)
	if errors.Is(err, entity.ErrNotFound) {
		return newError(http.StatusNotFound, CodeStreamNotFound, "Stream not found")
	}
	if err != nil {
		return err
	}
	if httpx.EqualTokens(token, e.WriteToken) {
		return nil
	}
	if s.cfg.ClaimTokens != nil {
		ok, err := s.cfg.ClaimTokens(r.Context(), entitypath.Main(entityURL), token)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
	}
	return newError(http.StatusUnauthorized, CodeUnauthorized, "Invalid write token")
}

// streamError maps streamdb errors to protocol answers.
func streamError(w http.ResponseWriter, err error) error {
	var closed *streamdb.ClosedError
	var stale *streamdb.StaleEpochError
	var gap *streamdb.SeqGapError
	var refused *streamdb.RefusedError
	switch {
	case errors.Is(err, streamdb.ErrNotFound):
		return newError(http.StatusNotFound, CodeStreamNotFound, "Stream not found")
	case errors.Is(err, streamdb.ErrGone):
		return newError(http.StatusGone, CodeStreamGone, "Stream was deleted")
	case errors.Is(err, streamdb.ErrExists):
		return newError(http.StatusConflict, CodeStreamExists, "A stream with a different configuration exists at this path")
	case errors.Is(err, streamdb.ErrContentType):
		return newError(http.StatusConflict, CodeContentTypeMismach, "Content-Type does not match the stream's content type")
	case errors.Is(err, streamdb.ErrStreamSeq):
		return newError(http.StatusConflict, CodeSequenceConflict, "Stream-Seq must be greater than the last one")
	case errors.As(err, &closed):
		w.Header().Set(hStreamClosed, "true")
		w.Header().Set(hStreamNextOffset, closed.Tail.String())
		return newError(http.StatusConflict, CodeStreamClosed, "Stream is closed")
	case errors.As(err, &stale):
		w.Header().Set(hProducerEpoch, strconv.FormatInt(stale.Current, 10))
		return newError(http.StatusForbidden, CodeProducerFenced, stale.Error())
	case errors.As(err, &gap):
		w.Header().Set(hProducerExpectedSeq, strconv.FormatInt(gap.Expected, 10))
		w.Header().Set(hProducerReceivedSeq, strconv.FormatInt(gap.Received, 10))
		return newError(http.StatusConflict, CodeProducerSeqGap, gap.Error())
	case errors.Is(err, streamdb.ErrEpochSeq):
		return newError(http.StatusBadRequest, CodeInvalidRequest, err.Error())
	case errors.Is(err, streamdb.ErrEmptyAppend):
		return newError(http.StatusBadRequest, CodeInvalidRequest, "An append needs a body (or Stream-Closed: true)")
	case errors.Is(err, streamdb.ErrForkSourceMissing):
		return newError(http.StatusNotFound, CodeStreamNotFound, "Fork source stream not found")
	case errors.Is(err, streamdb.ErrForkSourceGone):
		return newError(http.StatusConflict, CodeStreamGone, "Fork source stream was deleted")
	case errors.Is(err, streamdb.ErrForkOffset), errors.Is(err, streamdb.ErrForkSubOffset), errors.Is(err, streamdb.ErrOffsetBeyondTail):
		return newError(http.StatusBadRequest, CodeInvalidRequest, err.Error())
	case errors.As(err, &refused):
		if errors.Is(refused.Err, entity.ErrNotRunning) {
			return newError(http.StatusConflict, CodeNotRunning, "Entity is not accepting writes")
		}
		return newError(http.StatusConflict, CodeInvalidRequest, refused.Err.Error())
	case errors.Is(err, context.Canceled):
		return err
	}
	return err
}
