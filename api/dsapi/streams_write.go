package dsapi

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/inflight"
	"github.com/entityd/entityd/streamdb"
)

// createStream is PUT on a stream: create it (201), confirm an identical one (200), or
// refuse a different configuration (409). With Stream-Forked-From it creates a fork,
// which needs read access to the source. The caller owns the new stream.
func (s *Server) createStream(w http.ResponseWriter, r *http.Request, path string) error {
	r, err := s.policy.Authenticate(r)
	if err != nil {
		return err
	}
	if err := s.checkNewStreamPath(r, path); err != nil {
		return err
	}
	h := r.Header
	cfg := streamdb.CreateConfig{ContentType: h.Get("Content-Type"), Closed: headerTrue(h, hStreamClosed)}
	inTx, err := s.policy.PrepareCreate(r, path, &cfg)
	if err != nil {
		return err
	}
	// Both checks run under the locks of the create: what they judge is what is used.
	cfg.CheckExisting = func(existing *streamdb.Meta) error {
		_, err := s.policy.Decide(r, streamdb.IdentityOf(existing), path, OpRecreate)
		return err
	}
	cfg.CheckForkSource = func(src *streamdb.Meta) error {
		_, err := s.policy.Decide(r, streamdb.IdentityOf(src), src.Path, OpRead)
		return err
	}
	ttl, hasTTL := h.Get(hStreamTTL), h.Get(hStreamTTL) != ""
	exp, hasExp := h.Get(hStreamExpiresAt), h.Get(hStreamExpiresAt) != ""
	if hasTTL && hasExp {
		return httpx.BadRequest("Stream-TTL and Stream-Expires-At cannot be used together")
	}
	if hasTTL {
		n, ok := parseDecimal(ttl, maxSafeInteger)
		if !ok {
			return httpx.BadRequest("Stream-TTL must be a non-negative integer number of seconds")
		}
		cfg.TTLSeconds = &n
	}
	if hasExp {
		t, err := time.Parse(time.RFC3339Nano, exp)
		if err != nil {
			return httpx.BadRequest("Stream-Expires-At must be an RFC 3339 timestamp")
		}
		cfg.ExpiresAt = &t
	}
	if err := forkConfig(h, &cfg); err != nil {
		return err
	}
	var inFlight inflight.Hold // the body's bytes in flight (see budget), until it is stored
	defer inFlight.Release()
	data, err := s.budget.ReadBody(w, r, inflight.KeyFor(r, path), s.cfg.MaxAppendBytes, inflight.BodyCopies, &inFlight)
	if err != nil {
		return err
	}
	var initial [][]byte
	ct := cfg.ContentType
	if ct == "" && cfg.ForkFrom == "" {
		ct = streamdb.DefaultContentType
	}
	if len(data) > 0 {
		if streamdb.IsJSON(ct) {
			if err := checkJSONText(data); err != nil {
				return err
			}
			if initial, err = streamdb.SplitJSON(data); err != nil {
				return httpx.BadRequest("Body is not valid JSON")
			}
		} else {
			initial = [][]byte{data}
		}
	}
	var m *streamdb.Meta
	var created bool
	err = s.streams.WithTx(r.Context(), func(ctx context.Context, tx *streamdb.Tx) error {
		var err error
		if m, created, err = tx.Create(ctx, path, cfg, initial); err != nil || !created || inTx == nil {
			return err
		}
		return inTx(ctx, tx, m)
	})
	if err != nil {
		return StreamError(w, err)
	}
	w.Header().Set("Content-Type", m.ContentType)
	setOffsetHeaders(w.Header(), m.Tail, false, m.Closed)
	if !created {
		w.WriteHeader(http.StatusOK)
		return nil
	}
	w.Header().Set("Location", absoluteURL(r, r.URL.Path)) // as the client named it (root or alias)
	w.WriteHeader(http.StatusCreated)
	return nil
}

func forkConfig(h http.Header, cfg *streamdb.CreateConfig) error {
	from := h.Get(hStreamForkedFrom)
	offset := h.Get(hStreamForkOffset)
	sub, hasSub := h.Get(hStreamForkSubOffset), h.Get(hStreamForkSubOffset) != ""
	if from == "" {
		if offset != "" || hasSub {
			return httpx.BadRequest("Stream-Fork-Offset and Stream-Fork-Sub-Offset need Stream-Forked-From")
		}
		return nil
	}
	if u, err := url.Parse(from); err == nil && u.IsAbs() {
		from = u.Path
	}
	cfg.ForkFrom = StreamPath(from)
	if offset != "" {
		o, kind, err := streamdb.ParseOffset(offset)
		if err != nil || kind == streamdb.OffsetNow {
			return httpx.BadRequest("Stream-Fork-Offset is not a valid offset")
		}
		cfg.ForkOffset = &o
	}
	if hasSub {
		n, ok := parseDecimal(sub, maxSafeInteger)
		if !ok {
			return httpx.BadRequest("Stream-Fork-Sub-Offset must be a non-negative integer")
		}
		if n > 0 && cfg.ForkOffset == nil {
			return httpx.BadRequest("Stream-Fork-Sub-Offset needs Stream-Fork-Offset")
		}
		cfg.ForkSubOffset = n
	}
	return nil
}

// appendStream is POST on a stream: append, append and close, or close.
func (s *Server) appendStream(w http.ResponseWriter, r *http.Request, path string) error {
	h := r.Header
	req := &streamdb.AppendRequest{Path: path, Close: headerTrue(h, hStreamClosed), StreamSeq: h.Get(hStreamSeq)}
	op := OpWrite
	if req.Close {
		op = OpClose
	}
	id, r, err := s.identifyToWrite(r, path, op)
	if err != nil {
		return StreamError(w, err)
	}
	producer, err := producerHeaders(h)
	if err != nil {
		return err
	}
	req.Producer = producer
	var inFlight inflight.Hold // the body's bytes in flight (see budget), until it is stored
	defer inFlight.Release()
	data, err := s.budget.ReadBody(w, r, inflight.KeyFor(r, path), s.cfg.MaxAppendBytes, inflight.BodyCopies, &inFlight)
	if err != nil {
		return err
	}
	if len(data) == 0 && !req.Close {
		return httpx.BadRequest("An append needs a body (or Stream-Closed: true to close the stream)")
	}
	if len(data) > 0 {
		req.ContentType = h.Get("Content-Type")
		if req.ContentType == "" {
			return httpx.BadRequest("An append needs a Content-Type")
		}
		if streamdb.IsJSON(req.ContentType) {
			if err := checkJSONText(data); err != nil {
				return err
			}
			msgs, err := streamdb.SplitJSON(data)
			if err != nil {
				return httpx.BadRequest("Body is not valid JSON")
			}
			if len(msgs) == 0 {
				return httpx.BadRequest("An empty JSON array appends nothing")
			}
			req.Messages = msgs
		} else {
			req.Messages = [][]byte{data}
		}
	}
	var res streamdb.AppendResult
	var committed func() // what the stream's owner does once the append committed
	for replaced := false; ; replaced = true {
		statements, after, err := s.policy.PrepareAppend(r, id, req.Messages)
		if err != nil {
			return err
		}
		req.OnAdmit = nil
		if statements != nil {
			req.OnAdmit = func(string) []streamdb.Statement { return statements }
		}
		committed = after
		req.StreamID = id.ID
		res, err = s.streams.Append(r.Context(), req)
		if !errors.Is(err, streamdb.ErrStreamReplaced) || replaced {
			if err != nil {
				return StreamError(w, err)
			}
			break
		}
		// deleted and created again since it was identified: decide about the new one
		s.streams.Forget(path)
		if id, r, err = s.identifyToWrite(r, path, op); err != nil {
			return StreamError(w, err)
		}
	}
	if committed != nil && !res.Duplicate {
		committed()
	}
	setOffsetHeaders(w.Header(), res.Tail, false, res.Closed)
	status := http.StatusNoContent
	if producer != nil {
		w.Header().Set(hProducerEpoch, strconv.FormatInt(res.ProducerEpoch, 10))
		w.Header().Set(hProducerSeq, strconv.FormatInt(res.ProducerSeq, 10))
		if !res.Duplicate && len(req.Messages) > 0 {
			status = http.StatusOK
		}
	}
	w.WriteHeader(status)
	return nil
}

// identifyToWrite finds the stream at path for an append or close the stream's access
// decision allows. A stream written with a credential of its own (Policy.OwnCredential)
// is decided on that; for any other stream, and for a path with no stream, the caller is
// authenticated first, so that a request without credentials learns nothing.
func (s *Server) identifyToWrite(r *http.Request, path string, op Op) (streamdb.Identity, *http.Request, error) {
	id, err := s.streams.Identify(r.Context(), path)
	if errors.Is(err, streamdb.ErrNotFound) {
		// before authentication: appends to a stream written with a credential of its
		// own are answered on that credential, whoever sends it
		if merr := s.policy.Missing(r, path, op); merr != nil {
			return id, r, merr
		}
	}
	if err != nil || !s.policy.OwnCredential(id) {
		var aerr error
		if r, aerr = s.policy.Authenticate(r); aerr != nil {
			return id, r, aerr
		}
	}
	if err != nil {
		return id, r, err
	}
	r, err = s.policy.Decide(r, id, path, op)
	return id, r, err
}

func producerHeaders(h http.Header) (*streamdb.ProducerTuple, error) {
	_, hasID := h[http.CanonicalHeaderKey(hProducerID)]
	epoch, seq := h.Get(hProducerEpoch), h.Get(hProducerSeq)
	if !hasID && epoch == "" && seq == "" {
		return nil, nil
	}
	id := h.Get(hProducerID)
	if !hasID || epoch == "" || seq == "" {
		return nil, httpx.BadRequest("Producer-Id, Producer-Epoch and Producer-Seq must be sent together")
	}
	if id == "" {
		return nil, httpx.BadRequest("Producer-Id must not be empty")
	}
	e, ok1 := parseDecimal(epoch, maxSafeInteger)
	n, ok2 := parseDecimal(seq, maxSafeInteger)
	if !ok1 || !ok2 {
		return nil, httpx.BadRequest("Producer-Epoch and Producer-Seq must be non-negative integers")
	}
	return &streamdb.ProducerTuple{ID: id, Epoch: e, Seq: n}, nil
}

func (s *Server) deleteStream(w http.ResponseWriter, r *http.Request, path string) error {
	r, err := s.policy.Authenticate(r)
	if err != nil {
		return err
	}
	err = s.streams.Delete(r.Context(), path, func(m *streamdb.Meta) error {
		_, err := s.policy.Decide(r, streamdb.IdentityOf(m), path, OpDelete)
		return err
	})
	if errors.Is(err, streamdb.ErrNotFound) {
		if merr := s.policy.Missing(r, path, OpDelete); merr != nil {
			return merr
		}
	}
	if err != nil {
		return StreamError(w, err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// checkJSONText refuses a JSON stream body that is not UTF-8: it would be served back as
// application/json, which readers are right to reject. What the JSON says (escapes such
// as \u0000 included) is content, stored and served byte for byte.
func checkJSONText(data []byte) error {
	if !utf8.Valid(data) {
		return httpx.BadRequest("A JSON body must be valid UTF-8")
	}
	return nil
}

// absoluteURL is the URL of path on this server as the client addressed it.
func absoluteURL(r *http.Request, path string) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "https" || p == "http" {
		scheme = p
	}
	return scheme + "://" + r.Host + path
}
