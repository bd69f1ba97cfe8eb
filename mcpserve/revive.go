package mcpserve

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"iter"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/principal"
)

// Reviving a session: a request names a session this process does not hold, but the
// session store has it — the server restarted, or another replica opened it. If it is
// this entity's and this principal's, the session is opened again under its ID by
// replaying the client's initialize (and notifications/initialized) through the SDK's
// own handler, then the request goes on as if nothing had happened. A session the store
// does not have, or someone else's, gets the SDK's 404, after which the spec has the
// client initialize anew.
//
// The SDK picks a new session's ID with ServerOptions.GetSessionID, which sees no
// request; so new sessions of an entity are opened one at a time (entry.opening), and
// while a revival holds it GetSessionID answers the revived ID.

// sessionIDs hands the SDK the IDs of new sessions.
type sessionIDs struct {
	opening sync.Mutex // held while a session of the entity is being opened
	next    string     // the ID the next session gets (a revival's); "" for a fresh one
}

// newID is the entity server's GetSessionID; opening is held by the caller's caller.
func (ids *sessionIDs) newID() string {
	if id := ids.next; id != "" {
		ids.next = ""
		return id
	}
	return rand.Text()
}

// revive opens session id again if the store has it for this entity and the caller. It
// returns an error only for the session caps (the caller answers it); every other
// failure leaves the session unknown, which the SDK answers with 404.
func (s *Service) revive(r *http.Request, en *entry, id string) error {
	if s.store == nil || s.holds(id) {
		return nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	saved, ok, err := s.store.load(ctx, id)
	who, _ := principal.FromContext(r.Context())
	if err != nil {
		s.log.Warn("mcp: cannot look up a session to revive", zap.Error(err))
		return nil
	}
	if !ok || saved.entityURL != en.url || saved.principal != who.String() {
		return nil
	}
	p, err := s.reserve(en, who.String())
	if err != nil {
		return err
	}
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(saved.initialize, &init)
	en.ids.opening.Lock()
	en.ids.next = id
	rec := replay(en, r, "", `{"jsonrpc":"2.0","id":"entityd-revive","method":"initialize","params":`+string(saved.initialize)+`}`)
	en.ids.next = ""
	en.ids.opening.Unlock()
	if rec.Header().Get("Mcp-Session-Id") != id || en.session(id) == nil {
		p.release()
		s.log.Warn("mcp: reviving a session failed", zap.String("entity", en.url), zap.Int("status", rec.status),
			zap.String("answer", rec.body.String()))
		return nil
	}
	version := init.ProtocolVersion
	if !slices.Contains(ProtocolVersions, version) {
		version = ProtocolVersions[0]
	}
	replay(en, r, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "Mcp-Protocol-Version", version)
	s.hold(p, en, id)
	s.persist(p)
	s.log.Info("mcp: session revived", zap.String("entity", en.url), zap.String("principal", who.String()))
	return nil
}

// holds reports whether this process holds session id.
func (s *Service) holds(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.places[id] != nil
}

// replay sends body to the entity's SDK handler as a POST of the caller's (its
// principal and credentials), on session id ("": none), and returns the answer.
func replay(en *entry, r *http.Request, id, body string, header ...string) *recorder {
	req := r.Clone(r.Context())
	req.Method = http.MethodPost
	req.Body = http.NoBody
	req.ContentLength = int64(len(body))
	req.Body = readCloser{strings.NewReader(body)}
	for _, h := range []string{"Mcp-Session-Id", "Last-Event-Id", "Mcp-Protocol-Version"} {
		req.Header.Del(h)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if id != "" {
		req.Header.Set("Mcp-Session-Id", id)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	en.http.ServeHTTP(rec, withSessionOwner(req))
	return rec
}

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }

// recorder is the ResponseWriter of a replayed request: it keeps the answer for the log.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header         { return w.header }
func (w *recorder) WriteHeader(code int)        { w.status = code }
func (w *recorder) Write(b []byte) (int, error) { return w.body.Write(b) }
func (w *recorder) Flush()                      {}

// lenientEvents is the entity server's event store: when a client resumes a stream
// with a Last-Event-ID whose events are not here — the session was revived from another
// process, or the oldest events were dropped at EventStoreBytes — the SDK would answer
// 400 and the client would lose its notification stream for good. The stream goes on
// from now instead; what was sent meanwhile is lost, which resumption allows (the
// client re-lists when it next looks).
type lenientEvents struct {
	mcp.EventStore
	log *zap.Logger
}

func (e lenientEvents) After(ctx context.Context, sessionID, streamID string, index int) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		for data, err := range e.EventStore.After(ctx, sessionID, streamID, index) {
			if err != nil {
				e.log.Info("mcp: a resumed stream's missed events are not here; it goes on from now",
					zap.String("stream", streamID), zap.Error(err))
				return
			}
			if !yield(data, nil) {
				return
			}
		}
	}
}
