package livefeed

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/metrics"
	"github.com/entityd/entityd/internal/principal"
)

// MaxRequestBytes bounds the body of a POST that registers a read.
const MaxRequestBytes = 16 << 10

// maxIDBytes bounds a read's client id.
const maxIDBytes = 64

// forwardedHeaders are the request headers a read may carry (lower case): what the
// Durable Streams and Electric clients send on reads. Credentials are never taken from
// the body: the read carries the POST's own (credentialHeaders).
var forwardedHeaders = map[string]bool{"accept": true, "if-none-match": true, "last-event-id": true,
	"cache-control": true, "accept-language": true}

// credentialHeaders are copied from the POST that registers a read onto the read: the
// read is made with exactly the credentials of a direct request from the same caller.
var credentialHeaders = []string{"Authorization", principal.Header}

// hopHeaders are response headers that describe the sub-request's own connection.
var hopHeaders = map[string]bool{"Connection": true, "Keep-Alive": true, "Transfer-Encoding": true,
	"Content-Length": true, "Trailer": true, "Upgrade": true}

type requestBody struct {
	ID      string            `json:"id"`
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers"`
}

func bad(msg string) error { return httpx.New(http.StatusBadRequest, "INVALID_REQUEST", msg) }

// request serves POST /_electric/feed/{session}/requests: it starts a read whose
// response comes on the session.
func (s *Service) request(w http.ResponseWriter, r *http.Request) error {
	who, _ := principal.FromContext(r.Context())
	ss := s.lookup(chi.URLParam(r, "session"), who.String())
	if ss == nil {
		return notFound()
	}
	var body requestBody
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return httpx.New(http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE",
			"A feed request body is at most "+strconv.Itoa(MaxRequestBytes)+" bytes")
	case err != nil:
		return err
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		return bad("The body must be a JSON object {\"id\",\"path\",\"headers\"}: " + err.Error())
	}
	if body.ID == "" || len(body.ID) > maxIDBytes {
		return bad("id must be 1 to " + strconv.Itoa(maxIDBytes) + " bytes")
	}
	target, err := readTarget(body.Path)
	if err != nil {
		return err
	}
	hdr := http.Header{}
	for k, v := range body.Headers {
		lk := strings.ToLower(k)
		if !forwardedHeaders[lk] {
			return bad("Header " + strconv.Quote(k) + " cannot be sent through the feed")
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return bad("Header " + strconv.Quote(k) + " has a control character")
		}
		hdr.Set(k, v)
	}
	for _, k := range credentialHeaders {
		if v := r.Header.Get(k); v != "" {
			hdr.Set(k, v)
		}
	}
	ctx, cancel := context.WithCancel(ss.ctx)
	sub := &subRequest{id: body.ID, ss: ss, ctx: ctx, cancel: cancel}
	ss.mu.Lock()
	switch {
	case ss.ctx.Err() != nil:
		ss.mu.Unlock()
		cancel()
		return notFound()
	case ss.reqs[body.ID] != nil:
		ss.mu.Unlock()
		cancel()
		return httpx.New(http.StatusConflict, "CONFLICT", "A read with id "+strconv.Quote(body.ID)+" is in flight in this session")
	case len(ss.reqs) >= s.opts.MaxRequestsPerSession:
		ss.mu.Unlock()
		cancel()
		s.refuse("feed: too many reads in a session", zap.String("principal", ss.owner))
		e := httpx.New(http.StatusTooManyRequests, "TOO_MANY_REQUESTS",
			"A feed session has at most "+strconv.Itoa(s.opts.MaxRequestsPerSession)+" reads in flight")
		e.RetryAfter = "1"
		return e
	}
	ss.reqs[body.ID] = sub
	ss.wg.Add(1)
	ss.mu.Unlock()

	req := (&http.Request{Method: http.MethodGet, URL: target, RequestURI: target.RequestURI(),
		Proto: r.Proto, ProtoMajor: r.ProtoMajor, ProtoMinor: r.ProtoMinor, Header: hdr, Body: http.NoBody,
		Host: r.Host, RemoteAddr: r.RemoteAddr, TLS: r.TLS}).WithContext(ctx)
	metrics.FeedRequests.Inc()
	go func() {
		defer ss.wg.Done()
		defer metrics.FeedRequests.Dec()
		defer func() {
			ss.mu.Lock()
			delete(ss.reqs, sub.id)
			ss.mu.Unlock()
			cancel()
		}()
		sub.run(s.handler(), req)
	}()
	httpx.WriteJSON(w, http.StatusAccepted, map[string]string{"id": body.ID})
	return nil
}

// readTarget parses the path of a read: a path on this server (with its query), not the
// feed itself.
func readTarget(p string) (*url.URL, error) {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.ContainsAny(p, "\\\r\n\x00#") {
		return nil, bad("path must be a path on this server starting with a single \"/\"")
	}
	u, err := url.ParseRequestURI(p)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" {
		return nil, bad("path must be a path on this server starting with a single \"/\"")
	}
	clean := strings.ToLower(u.Path)
	if clean == Prefix || strings.HasPrefix(clean, Prefix+"/") {
		return nil, bad("The feed cannot read itself")
	}
	if strings.Contains(u.Path, "/../") || strings.HasSuffix(u.Path, "/..") {
		return nil, bad("path must not contain \"..\" segments")
	}
	return u, nil
}

// cancel serves DELETE /_electric/feed/{session}/requests/{id}.
func (s *Service) cancel(w http.ResponseWriter, r *http.Request) error {
	who, _ := principal.FromContext(r.Context())
	ss := s.lookup(chi.URLParam(r, "session"), who.String())
	if ss == nil {
		return notFound()
	}
	id, err := url.PathUnescape(chi.URLParam(r, "id"))
	if err != nil {
		id = chi.URLParam(r, "id")
	}
	ss.mu.Lock()
	sub := ss.reqs[id]
	ss.mu.Unlock()
	if sub != nil {
		sub.cancel()
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
