package inflight

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/metrics"
	"github.com/entityd/entityd/internal/principal"
)

// BodyCopies is how many times an append's body is held while it is stored: the body
// itself, its encoding as a bytea array, and the Bind message pgx sends (both as large as
// the body: a heap profile of 96 concurrent 8 MiB appends showed the three). A stream
// append reserves its length this many times, so the budget follows the memory it takes.
const BodyCopies = 3

// KeyFor is whose bytes a request reserves: its principal (every stream read and
// plain-stream write, and the entity API, carry one), else — a direct append to an
// entity's stream, whose credential is the entity's write token — the stream, so that
// each token holder has a share of its own rather than all of them sharing one.
func KeyFor(r *http.Request, streamPath string) Key {
	if p, ok := principal.FromContext(r.Context()); ok {
		return Key{Kind: p.Kind, ID: p.ID}
	}
	if streamPath != "" {
		return Key{Kind: "stream", ID: streamPath}
	}
	return Key{Kind: "anonymous"}
}

// Shared is the key of a server part that serves many principals at once (an SSE hub
// writes one rendering to subscribers of many): held to the process-wide limit only.
var Shared = Key{}

// busyError is the 503 of a reservation that did not fit within the wait.
type busyError struct{ e *httpx.Error }

func (b *busyError) Error() string { return b.e.Error() }
func (b *busyError) Unwrap() error { return b.e }

// Busy reports a refusal because the bytes in flight were at their limit (counted by
// a metric, not worth a log line).
func Busy(err error) bool {
	var b *busyError
	return errors.As(err, &b)
}

// Reserve makes h a reservation of n bytes for key (h may hold some already; it grows or
// shrinks). A request that cannot get them within the wait is refused with 503 +
// Retry-After; kind ("read" or "body") labels the refusal's metric.
func (b *Budget) Reserve(ctx context.Context, h *Hold, key Key, n int64, kind string) error {
	if h.b == nil {
		*h = Hold{b: b, key: key}
	}
	err := h.resize(ctx, n)
	if errors.Is(err, errBusy) {
		metrics.BytesRefused.WithLabelValues(kind).Inc()
		e := httpx.New(http.StatusServiceUnavailable, httpx.CodeServiceUnavailable,
			"The server holds too many bytes for requests in flight; retry shortly")
		e.RetryAfter = "1"
		return &busyError{e: e}
	}
	return err
}

// Settle fits a read's reservation to the bytes it turned out to need: more when its
// first message was larger than estimated (which may wait, or refuse); less when it was
// much smaller (not for a few bytes of framing: that would cost a lock per read).
func (b *Budget) Settle(ctx context.Context, h *Hold, key Key, n int64) error {
	if n > h.n || h.n-n > 64<<10 {
		return b.Reserve(ctx, h, key, n, "read")
	}
	return nil
}

// bodyLimit is the largest body a route takes: its configured limit, and no more than
// one principal may hold at once (copies times over) — a body that could never be
// reserved is refused at once with 413 rather than with 503s for ever.
func (b *Budget) bodyLimit(limit, copies int64) int64 {
	return min(limit, b.share/copies)
}

// ReadBody reads a request body of at most limit bytes into a reservation of copies
// times its size, taken before a byte is read: the Content-Length, or the limit for a
// body of unknown length (settled to its size once read). The caller releases h.
func (b *Budget) ReadBody(w http.ResponseWriter, r *http.Request, key Key, limit, copies int64, h *Hold) ([]byte, error) {
	limit = b.bodyLimit(limit, copies)
	if r.ContentLength > limit {
		return nil, bodyTooLarge(limit)
	}
	n := r.ContentLength
	if n < 0 {
		n = limit
	}
	if err := b.Reserve(r.Context(), h, key, n*copies, "body"); err != nil {
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
// regrowing copies for a large body), else as ReadAll does.
func readSized(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength <= 0 || r.ContentLength > limit {
		return ReadAll(w, r, limit)
	}
	data := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(r.Body, data); err != nil {
		return nil, bodyReadError(w, err, limit)
	}
	return data, nil
}

// ReadAll reads a request body of at most limit bytes (413 beyond) without a
// reservation: for small bodies whose limit is the bound.
func ReadAll(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		return nil, bodyReadError(w, err, limit)
	}
	return data, nil
}

// bodyReadError answers a body that could not be read: too large (413), too slow (408,
// and the connection closed: the read deadline passed), or cut off (400).
func bodyReadError(w http.ResponseWriter, err error, limit int64) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return bodyTooLarge(limit)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		w.Header().Set("Connection", "close")
		return httpx.New(http.StatusRequestTimeout, httpx.CodeRequestTimeout, "The request body did not arrive in time")
	}
	return httpx.New(http.StatusBadRequest, httpx.CodeInvalidRequest, "Could not read the request body")
}

func bodyTooLarge(limit int64) *httpx.Error {
	return httpx.New(http.StatusRequestEntityTooLarge, httpx.CodePayloadTooLarge,
		fmt.Sprintf("Request body exceeds the limit of %d bytes", limit))
}
