package acp

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"
)

// LoadSession is session/load. The id names an entity (sessionid.go); the session is
// attached to it — whichever entity it is, not only the adapter's own — and the entity's
// history is replayed before the answer, as the protocol asks: its main stream read
// from the start, page by page, each user message as a user_message_chunk and each
// reply as an agent_message_chunk, within the replay bounds (replay.go). The available
// commands follow, and are kept up to date, as after session/new; prompts then work as
// on a new session.
//
// The params are checked as session/new's (an absolute cwd; mcpServers are accepted and
// not used). An id that names no entity, or an entity the caller may not read, is
// "resource not found" (-32002). A session of this adapter already open under the id
// gets the history replayed again and stays as it is (its prompt in flight, if any,
// goes on). An ended entity can be loaded to read its history; prompts to it are
// refused by the server.
func (a *agent) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	if !a.enter() {
		return sdk.LoadSessionResponse{}, sdk.NewInternalError(map[string]any{"error": "the adapter is shutting down"})
	}
	defer a.wg.Done()
	if !filepath.IsAbs(p.Cwd) {
		return sdk.LoadSessionResponse{}, notAbsolute("/cwd")
	}
	typ, id, ok := entityOfSession(p.SessionId)
	if !ok {
		return sdk.LoadSessionResponse{}, &sdk.RequestError{Code: errResourceNotFound,
			Message: "session " + string(p.SessionId) + " not found: a session of entityd is the URL of an entity, /<type>/<id>",
			Data:    map[string]any{"sessionId": p.SessionId}}
	}

	a.mu.Lock()
	open := a.sessions[p.SessionId]
	a.mu.Unlock()
	if open != nil {
		h, err := readHistory(ctx, open.api)
		if err == nil {
			err = a.replay(ctx, open, h)
		}
		if err != nil {
			return sdk.LoadSessionResponse{}, loadError(p.SessionId, err)
		}
		return sdk.LoadSessionResponse{}, nil
	}

	// Does it exist, and may the caller read it? One clear answer before anything starts.
	if _, err := a.api.forEntity(typ, id).get(ctx); err != nil {
		return sdk.LoadSessionResponse{}, loadError(p.SessionId, err)
	}
	api, feed, release, err := a.attachEntity(ctx, typ, id)
	if err != nil {
		return sdk.LoadSessionResponse{}, loadError(p.SessionId, err)
	}
	sctx, cancel := context.WithCancel(a.life)
	context.AfterFunc(sctx, release) // session/close, a failed load, or shutdown
	s := &session{api: api, feed: feed, tag: randomHex(12), ctx: sctx, cancel: cancel}
	if err := a.addSession(s, p.SessionId); err != nil {
		cancel()
		return sdk.LoadSessionResponse{}, err
	}
	// The commands go out once the history has: the client is ready for this session's
	// updates (it asked to load it), so nothing waits for the answer here.
	s.tools = newEditorTools(a, s, p.Cwd, p.McpServers)
	replayed := make(chan struct{})
	go func() {
		defer a.wg.Done()
		a.pushCommands(s, replayed)
	}()
	a.startEditorTools(s, replayed)
	h, err := readHistory(ctx, api)
	if err == nil {
		err = a.replay(ctx, s, h)
	}
	if err != nil {
		a.mu.Lock()
		if a.sessions[s.id] == s {
			delete(a.sessions, s.id)
		}
		a.mu.Unlock()
		cancel()
		return sdk.LoadSessionResponse{}, loadError(p.SessionId, err)
	}
	close(replayed)
	a.log.Info("session loaded", zap.String("session", string(s.id)), zap.String("entity", api.url()),
		zap.Int("messages", len(h.msgs)), zap.Int("omitted", h.omitted))
	return sdk.LoadSessionResponse{Meta: streamSessionMeta(s)}, nil
}

// loadError is the answer to a load that failed: an entity that does not exist, or that
// the caller may not read, is ACP's "resource not found" (-32002) with the server's
// reason — not "authentication required", which would send the editor to an
// authentication the adapter does not offer; anything else as every other request.
func loadError(id sdk.SessionId, err error) error {
	var ae *APIError
	if !errors.As(err, &ae) {
		return toRequestError(err)
	}
	switch ae.Status {
	case http.StatusNotFound, http.StatusUnauthorized, http.StatusForbidden:
		re := toRequestError(err).(*sdk.RequestError)
		re.Code = errResourceNotFound
		re.Message = "session " + string(id) + " not found (" + re.Message + ")"
		re.Data.(map[string]any)["sessionId"] = id
		return re
	}
	return toRequestError(err)
}
