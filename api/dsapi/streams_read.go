package dsapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/inflight"
	"github.com/entityd/entityd/internal/metrics"
	"github.com/entityd/entityd/streamdb"
)

// readQuery is the parsed query of a stream GET.
type readQuery struct {
	from   streamdb.Offset
	kind   streamdb.OffsetKind
	given  bool // the offset parameter was present
	live   string
	cursor string
}

func parseReadQuery(r *http.Request) (readQuery, error) {
	q := r.URL.Query()
	rq := readQuery{kind: streamdb.OffsetBeginning, live: q.Get("live"), cursor: q.Get("cursor")}
	if vals, ok := q["offset"]; ok {
		if len(vals) != 1 {
			return rq, httpx.BadRequest("offset must be given at most once")
		}
		if vals[0] == "" {
			return rq, httpx.BadRequest("offset must not be empty")
		}
		o, kind, err := streamdb.ParseOffset(vals[0])
		if err != nil {
			return rq, httpx.BadRequest("offset is malformed: expected -1, now, or an offset returned by this server")
		}
		rq.from, rq.kind, rq.given = o, kind, true
	}
	switch rq.live {
	case "", "long-poll", "sse":
	default:
		return rq, httpx.BadRequest("live must be long-poll or sse")
	}
	if rq.live != "" && !rq.given {
		return rq, httpx.BadRequest("live reads need an offset")
	}
	return rq, nil
}

// lookupToRead finds the stream at path for a reader the stream's access decision lets
// read it. The caller is authenticated first, so that a request without credentials
// learns nothing, not even whether the stream exists.
func (s *Server) lookupToRead(r *http.Request, path string) (*streamdb.Meta, *http.Request, error) {
	r, err := s.policy.Authenticate(r)
	if err != nil {
		return nil, r, err
	}
	m, err := s.streams.Lookup(r.Context(), path)
	if errors.Is(err, streamdb.ErrNotFound) {
		if merr := s.policy.Missing(r, path, OpRead); merr != nil {
			return nil, r, merr
		}
	}
	if err != nil {
		return nil, r, err
	}
	r, err = s.policy.Decide(r, streamdb.IdentityOf(m), path, OpRead)
	return m, r, err
}

// headStream is HEAD on a stream: its metadata, no body. HEAD does not refresh a TTL.
func (s *Server) headStream(w http.ResponseWriter, r *http.Request, path string) error {
	m, r, err := s.lookupToRead(r, path)
	if err != nil {
		if apiErr, ok := StreamError(w, err).(*httpx.Error); ok {
			w.WriteHeader(apiErr.Status)
			return nil
		}
		return err
	}
	h := w.Header()
	h.Set("Content-Type", m.ContentType)
	h.Set("Cache-Control", "no-store")
	setOffsetHeaders(h, m.Tail, false, m.Closed)
	writeExpiry(h, m)
	w.WriteHeader(http.StatusOK)
	return nil
}

func writeExpiry(h http.Header, m *streamdb.Meta) {
	if m.TTLSeconds != nil {
		h.Set(hStreamTTL, strconv.FormatInt(*m.TTLSeconds, 10))
	}
	if m.ExpiresAt != nil {
		h.Set(hStreamExpiresAt, m.ExpiresAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	}
}

// readStream is GET on a stream: catch-up, long-poll or SSE.
func (s *Server) readStream(w http.ResponseWriter, r *http.Request, path string) error {
	r, err := s.policy.Authenticate(r)
	if err != nil {
		return err
	}
	rq, err := parseReadQuery(r)
	if err != nil {
		return err
	}
	m, r, err := s.lookupToRead(r, path)
	if err != nil {
		return StreamError(w, err)
	}
	if err := s.streams.Touch(r.Context(), m); err != nil {
		return err
	}
	if rq.kind == streamdb.OffsetNow {
		rq.from = m.Tail
	}
	if rq.from.Seq > m.Tail.Seq {
		return httpx.BadRequest("offset is beyond the tail of the stream")
	}
	// A read "from the beginning" (-1 or no offset) gets the snapshot; an explicit offset,
	// even 0_0, gets the changes after it, so a client parked at an empty collection's
	// tail waits instead of receiving the (empty) snapshot again and again.
	if rq.kind == streamdb.OffsetBeginning {
		body, next, ok, err := s.policy.Snapshot(r.Context(), m)
		if err != nil {
			return err
		}
		if ok {
			return s.readSnapshot(w, r, m, rq, body, next)
		}
	}
	switch rq.live {
	case "long-poll":
		return s.longPoll(w, r, m, rq)
	case "sse":
		return s.serveSSE(w, r, m, rq, nil)
	}
	if rq.kind == streamdb.OffsetNow {
		h := w.Header()
		h.Set("Content-Type", m.ContentType)
		h.Set("Cache-Control", "no-store")
		setOffsetHeaders(h, m.Tail, true, m.Closed)
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(emptyBody(m))
		return nil
	}
	return s.writeCatchUp(w, r, m, rq.from, m.Tail, m.Closed, "")
}

// writeCatchUp answers with the messages after from up to tail (a bounded chunk). The
// bytes the read holds are reserved before it is made (bytes in flight, see budget) and
// released once the body is written or its write deadline passed.
func (s *Server) writeCatchUp(w http.ResponseWriter, r *http.Request, m *streamdb.Meta, from, tail streamdb.Offset, closed bool, cursor string) error {
	key := inflight.KeyFor(r, m.Path)
	var res inflight.Hold
	defer res.Release()
	if err := s.budget.Reserve(r.Context(), &res, key, s.readEstimate(from, tail), "read"); err != nil {
		return err
	}
	msgs, err := s.streams.Read(r.Context(), m, from, tail)
	if err != nil {
		return err
	}
	msgs = stampStateOffsets(m, msgs)
	next := from
	if len(msgs) > 0 {
		next = msgs[len(msgs)-1].End
	}
	upToDate := next.Seq >= tail.Seq
	closedAtEnd := closed && upToDate
	tag := etag(m.Path, from, next, closedAtEnd)
	notModified := r.Header.Get("If-None-Match") == tag
	n := bodySize(m, msgs)
	if notModified {
		res.Release()
	} else if err := s.budget.Settle(r.Context(), &res, key, int64(n)); err != nil {
		return err // before any header is set: a 503 must not carry the read's caching headers
	}
	h := w.Header()
	h.Set("Content-Type", m.ContentType)
	setOffsetHeaders(h, next, upToDate, closedAtEnd)
	if cursor != "" {
		h.Set(hStreamCursor, cursor)
	}
	h.Set("ETag", tag)
	if upToDate {
		h.Set("Cache-Control", "no-cache")
	} else {
		h.Set("Cache-Control", "public, max-age=60, stale-while-revalidate=300")
	}
	if notModified {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	h.Set("Content-Length", strconv.Itoa(n))
	w.WriteHeader(http.StatusOK)
	s.writeBody(w, n, func(w io.Writer) error { return writeMessages(w, m, msgs, n) })
	return nil
}

func renderBody(m *streamdb.Meta, msgs []streamdb.Message) []byte {
	data := make([][]byte, len(msgs))
	for i, msg := range msgs {
		data[i] = msg.Data
	}
	if streamdb.IsJSON(m.ContentType) {
		return streamdb.JoinJSON(data)
	}
	return bytes.Join(data, nil)
}

func emptyBody(m *streamdb.Meta) []byte {
	if streamdb.IsJSON(m.ContentType) {
		return []byte("[]")
	}
	return nil
}

// longPoll answers at once when there is data after the offset (or the stream is
// closed), and otherwise waits for an append up to the long-poll timeout.
func (s *Server) longPoll(w http.ResponseWriter, r *http.Request, m *streamdb.Meta, rq readQuery) error {
	cursor := nextCursor(rq.cursor)
	if rq.from.Seq < m.Tail.Seq {
		return s.writeCatchUp(w, r, m, rq.from, m.Tail, m.Closed, cursor)
	}
	if m.Closed {
		return noContent(w, rq.from, true, "")
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.LongPollTimeout)
	defer cancel()
	defer s.liveContext(ctx, cancel)()
	metrics.LongPollsWaiting.Inc()
	res, err := s.streams.Wait(ctx, m, rq.from)
	metrics.LongPollsWaiting.Dec()
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled) && r.Context().Err() == nil:
		return noContent(w, rq.from, false, cursor)
	case err != nil:
		return StreamError(w, err)
	}
	if res.Tail.Seq > rq.from.Seq {
		return s.writeCatchUp(w, r, m, rq.from, res.Tail, res.Closed, cursor)
	}
	return noContent(w, rq.from, res.Closed, cursor)
}

func noContent(w http.ResponseWriter, next streamdb.Offset, closed bool, cursor string) error {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	setOffsetHeaders(h, next, true, closed)
	if cursor != "" && !closed {
		h.Set(hStreamCursor, cursor)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// readSnapshot answers a read from the start with the policy's snapshot of the stream
// (an entity's slash-command collection: snapshot-start, one insert per row,
// snapshot-end) positioned at tail, instead of the change history: a picker fills itself
// with one small response and then follows live changes.
func (s *Server) readSnapshot(w http.ResponseWriter, r *http.Request, m *streamdb.Meta, rq readQuery, body []byte, tail streamdb.Offset) error {
	if rq.live == "sse" {
		return s.serveSSE(w, r, m, rq, &ssePreamble{body: body, next: tail}) // it reserves the event
	}
	var res inflight.Hold
	defer res.Release()
	if err := s.budget.Reserve(r.Context(), &res, inflight.KeyFor(r, m.Path), int64(len(body)), "read"); err != nil {
		return err
	}
	closed := m.Closed && tail.Seq >= m.Tail.Seq
	h := w.Header()
	h.Set("Content-Type", m.ContentType)
	setOffsetHeaders(h, tail, true, closed)
	if rq.live == "long-poll" {
		h.Set(hStreamCursor, nextCursor(rq.cursor))
	}
	tag := etag(m.Path, streamdb.Start, tail, closed)
	h.Set("ETag", tag)
	h.Set("Cache-Control", "no-cache")
	if match := r.Header.Get("If-None-Match"); match != "" && match == tag {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	s.writeBody(w, len(body), func(w io.Writer) error {
		_, err := w.Write(body)
		return err
	})
	return nil
}
