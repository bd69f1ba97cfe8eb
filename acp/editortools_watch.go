package acp

import (
	"context"
	"encoding/json"
	"sync"

	"go.uber.org/zap"

	"github.com/entityd/entityd/wire/editortool"
)

// callWatch follows the entity's main stream for the whole adapter, once a session has
// MCP servers, and hands every editor_tool_call to the session it names: calls written
// while no prompt of that session is in flight (a schedule, another sender's message, a
// handler that answers later) are run too. One long-poll serves every session.
type callWatch struct {
	mu      sync.Mutex
	started bool
}

// start begins following from the stream's current tail, unless it has begun: calls
// written before a session's first offer cannot name it. ctx bounds the tail read.
func (w *callWatch) start(ctx context.Context, a *agent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started || a.life.Err() != nil {
		return
	}
	offset := "now"
	if b, err := a.api.readStream(ctx, "/main", "now", "", false); err != nil {
		a.log.Warn("reading the entity's stream tail for editor tool calls", zap.Error(err))
	} else if b.next != "" && b.next != "now" {
		offset = b.next
	}
	w.started = true
	a.wg.Add(1) // the caller is a session goroutine Serve waits for, so the group is not at zero
	go func() {
		defer a.wg.Done()
		w.follow(a, offset)
	}()
}

// follow long-polls the main stream until the adapter ends or the stream closes.
func (w *callWatch) follow(a *agent, offset string) {
	var cursor string
	b := newBackoff()
	for a.life.Err() == nil {
		res, err := a.api.readStream(a.life, "/main", offset, cursor, true)
		if err != nil {
			if a.life.Err() != nil {
				return
			}
			if !retryable(err) {
				a.log.Error("stopped following the entity's stream for editor tool calls", zap.Error(err))
				return
			}
			a.log.Warn("following the entity's stream for editor tool calls", zap.Error(err), zap.Duration("retry_in", b.peek()))
			if !b.wait(a.life) {
				return
			}
			continue
		}
		b.reset()
		offset, cursor = res.next, res.cursor
		for _, e := range res.events {
			if !isCall(e) {
				continue
			}
			var v struct {
				Session string `json:"session"`
			}
			if json.Unmarshal(e.Value, &v) != nil {
				continue
			}
			s := a.sessionTagged(v.Session)
			if s == nil || s.tools == nil {
				continue // another adapter's session, or one that ended
			}
			seq, _ := offsetSeq(e.Headers.Offset)
			s.tools.watched(e.Key, e.Value, seq)
		}
		if res.closed {
			return
		}
	}
}

// sessionTagged is the open session whose messages' keys carry tag (the session an
// editor_tool_call names), or nil.
func (a *agent) sessionTagged(tag string) *session {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.sessions {
		if s.tag == tag {
			return s
		}
	}
	return nil
}

// isCall reports an event that asks for a tool call (an insert, or an upsert).
func isCall(e event) bool {
	return e.Type == editortool.CallEventType && e.Key != "" &&
		(e.Headers.Operation == "" || e.Headers.Operation == "insert" || e.Headers.Operation == "upsert")
}
