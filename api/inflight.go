package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/entityd/entityd/internal/metrics"
	"github.com/entityd/entityd/internal/principal"
	"github.com/entityd/entityd/streamdb"
)

// bodyCopies is how many times an append's body is held while it is stored: the body
// itself, its encoding as a bytea array, and the Bind message pgx sends (both as large as
// the body: a heap profile of 96 concurrent 8 MiB appends showed the three). A stream
// append reserves its length this many times, so the budget follows the memory it takes.
const bodyCopies = 3

// keyFor is whose bytes a request reserves: its principal (every stream read and
// plain-stream write, and the entity API, carry one), else — a direct append to an
// entity's stream, whose credential is the entity's write token — the stream, so that
// each token holder has a share of its own rather than all of them sharing one.
func keyFor(r *http.Request, streamPath string) budgetKey {
	if p, ok := principal.FromContext(r.Context()); ok {
		return budgetKey{kind: p.Kind, id: p.ID}
	}
	if streamPath != "" {
		return budgetKey{kind: "stream", id: streamPath}
	}
	return budgetKey{kind: "anonymous"}
}

// hubKey is the key of an SSE hub: it writes one rendering to subscribers of many
// principals, so it is held to the process-wide budget only.
var hubKey = budgetKey{}

// reserve makes h a reservation of n bytes for key (h may hold some already; it grows or
// shrinks). A request that cannot get them within the wait is refused with 503 +
// Retry-After; kind ("read" or "body") labels the refusal's metric.
func (s *Server) reserve(ctx context.Context, h *hold, key budgetKey, n int64, kind string) error {
	if h.b == nil {
		*h = hold{b: s.budget, key: key}
	}
	err := h.resize(ctx, n)
	if errors.Is(err, errBudgetBusy) {
		metrics.BytesRefused.WithLabelValues(kind).Inc()
		return &retryable{e: newError(http.StatusServiceUnavailable, CodeServiceUnavailable,
			"The server holds too many bytes for requests in flight; retry shortly")}
	}
	return err
}

// settle fits a read's reservation to the bytes it turned out to need: more when its
// first message was larger than estimated (which may wait, or refuse); less when it was
// much smaller (not for a few bytes of framing: that would cost a lock per read).
func (s *Server) settle(ctx context.Context, h *hold, key budgetKey, n int64) error {
	if n > h.n || h.n-n > 64<<10 {
		return s.reserve(ctx, h, key, n, "read")
	}
	return nil
}

// readEstimate is what reading (from, tail] will hold before it is read: the bytes
// between the offsets, at most a read's cap — unless the range is one message, which a
// read returns whatever its size. A larger first message is settled after the read.
func (s *Server) readEstimate(from, tail streamdb.Offset) int64 {
	n := max(tail.Pos-from.Pos, 0)
	if tail.Seq-from.Seq == 1 {
		return n
	}
	return min(n, int64(s.streams.MaxReadBytes()))
}

// bodyLimit is the largest body a route takes: its configured limit, and no more than
// one principal may hold at once (copies times over) — a body that could never be
// reserved is refused at once with 413 rather than with 503s for ever.
func (s *Server) bodyLimit(limit, copies int64) int64 {
	return min(limit, s.budget.share/copies)
}

// readBodyReserved reads a request body of at most limit bytes into a reservation of
// copies times its size, taken before a byte is read: the Content-Length, or the limit
// for a body of unknown length (settled to its size once read). The caller releases h.
func (s *Server) readBodyReserved(w http.ResponseWriter, r *http.Request, key budgetKey, limit, copies int64, h *hold) ([]byte, error) {
	limit = s.bodyLimit(limit, copies)
	if r.ContentLength > limit {
		return nil, bodyTooLarge(limit)
	}
	n := r.ContentLength
	if n < 0 {
		n = limit
	}
	if err := s.reserve(r.Context(), h, key, n*copies, "body"); err != nil {
		return nil, err
	}
	data, err := readSized(w, r, limit)
	if err != nil {
		return nil, err
	}
	if r.ContentLength < 0 {
		_ = h.resize(r.Context(), int64(len(data))*copies) // shrinking never fails
	}
	return data, nil
}

// readSized reads the body into one buffer of its Content-Length when it has one (no
// regrowing copies for a large body), else as readBody does.
func readSized(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength <= 0 || r.ContentLength > limit {
		return readBody(w, r, limit)
	}
	data := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(r.Body, data); err != nil {
		return nil, bodyReadError(w, err, limit)
	}
	return data, nil
}

func bodyTooLarge(limit int64) *Error {
	return newError(http.StatusRequestEntityTooLarge, CodePayloadTooLarge,
		fmt.Sprintf("Request body exceeds the limit of %d bytes", limit))
}

// BytesInFlight is the bytes requests hold now (for tests; the gauge
// entityd_bytes_in_flight reports it).
func (s *Server) BytesInFlight() int64 { return s.budget.inFlight() }
