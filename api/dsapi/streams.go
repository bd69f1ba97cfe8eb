package dsapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/entityd/entityd/entity"
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

// StreamPath is the stream a request path names: the path itself, or for the alias the
// path after it.
func StreamPath(urlPath string) string {
	if rest, ok := strings.CutPrefix(urlPath, StreamAlias+"/"); ok {
		return "/" + rest
	}
	return urlPath
}

// Serve answers one Durable Streams request on the stream at path (see StreamPath).
func (s *Server) Serve(w http.ResponseWriter, r *http.Request, path string) error {
	if len(path) > s.cfg.MaxStreamPathBytes {
		return httpx.BadRequest(fmt.Sprintf("Stream paths must be at most %d bytes", s.cfg.MaxStreamPathBytes))
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
	return httpx.New(http.StatusMethodNotAllowed, httpx.CodeMethodNotAllowed, "Method "+r.Method+" is not allowed on streams")
}

// checkNewStreamPath applies the stream path rules (internal/textpolicy.CheckPath) and
// the reserved paths to a stream being created: existing streams stay readable and
// deletable whatever their name.
func (s *Server) checkNewStreamPath(r *http.Request, path string) error {
	if textpolicy.HasEncodedSlash(r.URL.EscapedPath()) {
		return httpx.BadRequest("Stream paths must not contain an encoded slash (%2F)")
	}
	if p := textpolicy.CheckPath(path, s.cfg.MaxStreamPathBytes); p != "" {
		return httpx.BadRequest("The stream path " + p)
	}
	return s.policy.CheckNewPath(path)
}

// StreamError maps streamdb errors to the protocol's answers.
func StreamError(w http.ResponseWriter, err error) error {
	var closed *streamdb.ClosedError
	var stale *streamdb.StaleEpochError
	var gap *streamdb.SeqGapError
	var refused *streamdb.RefusedError
	switch {
	case errors.Is(err, streamdb.ErrNotFound):
		return httpx.New(http.StatusNotFound, CodeStreamNotFound, "Stream not found")
	case errors.Is(err, streamdb.ErrGone):
		return httpx.New(http.StatusGone, CodeStreamGone, "Stream was deleted")
	case errors.Is(err, streamdb.ErrExists):
		return httpx.New(http.StatusConflict, CodeStreamExists, "A stream with a different configuration exists at this path")
	case errors.Is(err, streamdb.ErrContentType):
		return httpx.New(http.StatusConflict, CodeContentTypeMismach, "Content-Type does not match the stream's content type")
	case errors.Is(err, streamdb.ErrStreamSeq):
		return httpx.New(http.StatusConflict, CodeSequenceConflict, "Stream-Seq must be greater than the last one")
	case errors.As(err, &closed):
		w.Header().Set(hStreamClosed, "true")
		w.Header().Set(hStreamNextOffset, closed.Tail.String())
		return httpx.New(http.StatusConflict, CodeStreamClosed, "Stream is closed")
	case errors.As(err, &stale):
		w.Header().Set(hProducerEpoch, strconv.FormatInt(stale.Current, 10))
		return httpx.New(http.StatusForbidden, CodeProducerFenced, stale.Error())
	case errors.As(err, &gap):
		w.Header().Set(hProducerExpectedSeq, strconv.FormatInt(gap.Expected, 10))
		w.Header().Set(hProducerReceivedSeq, strconv.FormatInt(gap.Received, 10))
		return httpx.New(http.StatusConflict, CodeProducerSeqGap, gap.Error())
	case errors.Is(err, streamdb.ErrEpochSeq):
		return httpx.New(http.StatusBadRequest, httpx.CodeInvalidRequest, err.Error())
	case errors.Is(err, streamdb.ErrEmptyAppend):
		return httpx.New(http.StatusBadRequest, httpx.CodeInvalidRequest, "An append needs a body (or Stream-Closed: true)")
	case errors.Is(err, streamdb.ErrForkSourceMissing):
		return httpx.New(http.StatusNotFound, CodeStreamNotFound, "Fork source stream not found")
	case errors.Is(err, streamdb.ErrForkSourceGone):
		return httpx.New(http.StatusConflict, CodeStreamGone, "Fork source stream was deleted")
	case errors.Is(err, streamdb.ErrForkOffset), errors.Is(err, streamdb.ErrForkSubOffset), errors.Is(err, streamdb.ErrOffsetBeyondTail):
		return httpx.New(http.StatusBadRequest, httpx.CodeInvalidRequest, err.Error())
	case errors.As(err, &refused):
		if errors.Is(refused.Err, entity.ErrNotRunning) {
			return httpx.New(http.StatusConflict, httpx.CodeNotRunning, "Entity is not accepting writes")
		}
		return httpx.New(http.StatusConflict, httpx.CodeInvalidRequest, refused.Err.Error())
	case errors.Is(err, context.Canceled):
		return err
	}
	return err
}
