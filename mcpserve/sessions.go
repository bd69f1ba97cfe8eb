package mcpserve

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/httpx"
)

// The session ledger counts open MCP sessions over the server and per principal: each
// holds a notification stream and memory, so one principal must not be able to take
// them all and lock everyone else out. A place is taken before the SDK opens a session
// (so concurrent initializes cannot overshoot) and given back exactly once, whichever
// way the session ends: the client's DELETE, the idle timeout, the entity's server
// being dropped, the service stopping, or the initialize failing.

// place is one session's place in the ledger; its fields other than once are guarded
// by s.mu.
type place struct {
	s    *Service
	en   *entry
	who  string // the principal holding it
	id   string // the session's ID, once it has one
	once sync.Once
}

// reserve takes a place for a new session of principal who on en, or says why not:
// 429 at the principal's own cap (only its own sessions free a place), 503 at the
// entity's or the server's (someone else's may).
func (s *Service) reserve(en *entry, who string) (*place, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.owned[who] >= s.opts.MaxSessionsPerPrincipal {
		return nil, httpx.New(http.StatusTooManyRequests, "TOO_MANY_SESSIONS",
			"You have too many MCP sessions open; end one (DELETE) or let one go idle, then retry")
	}
	if s.open >= s.opts.MaxSessions || en.sessions() >= s.opts.MaxSessionsPerEntity {
		return nil, httpx.New(http.StatusServiceUnavailable, "TOO_MANY_SESSIONS",
			"Too many MCP sessions are open; close one or retry later")
	}
	s.open++
	s.owned[who]++
	return &place{s: s, en: en, who: who}, nil
}

// release gives the place back (once; later calls do nothing).
func (p *place) release() {
	p.once.Do(func() {
		s := p.s
		s.mu.Lock()
		defer s.mu.Unlock()
		s.open--
		if s.owned[p.who]--; s.owned[p.who] <= 0 {
			delete(s.owned, p.who)
		}
		if p.id != "" && s.places[p.id] == p {
			delete(s.places, p.id)
		}
	})
}

// hold binds the place to the session the SDK opened with ID id on en, and gives it
// back when that session ends. Without such a session (the initialize failed, or it
// already ended) the place is given back now.
func (s *Service) hold(p *place, en *entry, id string) {
	ss := en.session(id)
	if ss == nil {
		p.release()
		return
	}
	s.mu.Lock()
	if s.ctx.Err() != nil { // stopping: Stop may be waiting on s.wg already
		s.mu.Unlock()
		// not here: Close waits for the session's requests, this initialize among them
		go func() { _ = ss.Close() }()
		p.release()
		return
	}
	p.id = id
	s.places[id] = p
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		// an entry that closes (dropped, stopping) ends its sessions, this one too even
		// if it opened after the entry's close looked
		stop := context.AfterFunc(en.ctx, func() { _ = ss.Close() })
		_ = ss.Wait() // the idle timeout, a DELETE or the entry's close
		stop()
		// Ended for good unless the service is stopping: then the session is meant to
		// outlive the process, and its row stays for the next one (revive.go). The row
		// goes before the place: while the place is held no request revives the session,
		// so one racing the end (the client's GET reconnecting) finds no row afterwards.
		if s.ctx.Err() == nil {
			s.forget(id)
		}
		p.release()
	}()
}

// persist records the session p holds in the session store (if any) so that it
// outlives this process. It runs after the response to the initialize, outside the
// entity's one-at-a-time opening of sessions.
func (s *Service) persist(p *place) {
	s.mu.Lock()
	id, held := p.id, p.id != "" && s.places[p.id] == p
	s.mu.Unlock()
	if s.store == nil || !held {
		return
	}
	ss := p.en.session(id)
	if ss == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.store.save(ctx, id, p.en.url, p.who, ss.InitializeParams()); err != nil {
		s.log.Warn("mcp: the session will not outlive this process", zap.Error(err))
	}
}

// ended gives back the place of session id once the SDK no longer has it (after a
// DELETE).
func (s *Service) ended(en *entry, id string) {
	s.mu.Lock()
	p := s.places[id]
	s.mu.Unlock()
	if p != nil && p.en == en && en.session(id) == nil {
		// before the answer goes out, and before the place (see hold): a request on the
		// ended session that follows it, here or on another replica, finds nothing to revive
		s.forget(id)
		p.release()
	}
}

// forget deletes session id from the session store (if any): it ended for good.
func (s *Service) forget(id string) {
	if s.store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.store.forget(ctx, id); err != nil {
		s.log.Warn("mcp: forgetting an ended session failed; it expires later", zap.Error(err))
	}
}

// session is the entity's open session with ID id, or nil.
func (en *entry) session(id string) *mcp.ServerSession {
	if id == "" {
		return nil
	}
	for ss := range en.server.Sessions() {
		if ss.ID() == id {
			return ss
		}
	}
	return nil
}
