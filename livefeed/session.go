package livefeed

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/metrics"
	"github.com/entityd/entityd/internal/principal"
)

// session is one open feed: the reads in it and the queue of events to its reader.
type session struct {
	id    string
	owner string // the principal, "kind:id"
	ctx   context.Context
	out   chan []byte // rendered events, bounded: writers wait when it is full

	mu   sync.Mutex
	reqs map[string]*subRequest
	wg   sync.WaitGroup // the reads' goroutines
}

// event renders one SSE event.
func event(name string, v any) []byte {
	data, _ := json.Marshal(v)
	var b bytes.Buffer
	b.Grow(len(name) + len(data) + 16)
	b.WriteString("event: ")
	b.WriteString(name)
	b.WriteString("\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
	return b.Bytes()
}

// send queues ev for the reader; it waits while the queue is full, and fails once the
// session (or the read, ctx) has ended.
func (ss *session) send(ctx context.Context, ev []byte) error {
	select {
	case ss.out <- ev:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-ss.ctx.Done():
		return ss.ctx.Err()
	}
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// open serves GET /_electric/feed: the session's event stream, for as long as the
// response lasts.
func (s *Service) open(w http.ResponseWriter, r *http.Request) error {
	who, _ := principal.FromContext(r.Context()) // api authenticated the caller
	owner := who.String()
	ctx, end := s.live(r.Context())
	defer end()
	ss := &session{id: newID(), owner: owner, ctx: ctx, out: make(chan []byte, s.opts.QueueEvents),
		reqs: map[string]*subRequest{}}
	s.mu.Lock()
	if s.owned[owner] >= s.opts.MaxSessionsPerPrincipal {
		s.mu.Unlock()
		s.refuse("feed: too many sessions", zap.String("principal", owner))
		e := httpx.New(http.StatusTooManyRequests, "TOO_MANY_SESSIONS",
			"Principal "+owner+" holds "+strconv.Itoa(s.opts.MaxSessionsPerPrincipal)+" feed sessions already; close one")
		e.RetryAfter = "5"
		return e
	}
	s.owned[owner]++
	s.sessions[ss.id] = ss
	s.mu.Unlock()
	metrics.FeedSessions.Inc()
	s.log.Debug("feed session opened", zap.String("session", ss.id), zap.String("principal", owner))
	defer func() {
		end() // cancels every read of the session
		ss.wg.Wait()
		s.mu.Lock()
		delete(s.sessions, ss.id)
		if s.owned[owner]--; s.owned[owner] <= 0 {
			delete(s.owned, owner)
		}
		s.mu.Unlock()
		metrics.FeedSessions.Dec()
		s.log.Debug("feed session closed", zap.String("session", ss.id), zap.String("principal", owner))
	}()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	write := func(b []byte) bool {
		timed := rc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout)) == nil
		if _, err := w.Write(b); err != nil {
			return false
		}
		if err := rc.Flush(); err != nil {
			return false
		}
		if timed {
			_ = rc.SetWriteDeadline(time.Time{})
		}
		return true
	}
	if !write(event("open", map[string]string{"session": ss.id})) {
		return nil
	}
	beat := time.NewTicker(s.opts.Heartbeat)
	defer beat.Stop()
	var batch bytes.Buffer
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-beat.C:
			if !write([]byte(": heartbeat\n\n")) {
				return nil
			}
		case ev := <-ss.out:
			// take what else is queued too: one write and one flush for a burst
			batch.Reset()
			batch.Write(ev)
		more:
			for batch.Len() < 64<<10 {
				select {
				case ev := <-ss.out:
					batch.Write(ev)
				default:
					break more
				}
			}
			if !write(batch.Bytes()) {
				return nil
			}
		}
	}
}

// lookup is the session id names when caller owns it; nil otherwise (the same answer
// for a session that does not exist and one of another principal).
func (s *Service) lookup(id, caller string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[id]
	if ss == nil || ss.owner != caller {
		return nil
	}
	return ss
}

func (s *Service) refuse(msg string, fields ...zap.Field) {
	s.refusals.Log(s.log, zapcore.InfoLevel, msg, fields...)
}

func notFound() error {
	return httpx.New(http.StatusNotFound, "NOT_FOUND", "No such feed session")
}
