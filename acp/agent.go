package acp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"
)

// maxSessions bounds the sessions one adapter keeps (each holds a goroutine and, while
// prompting, two HTTP requests); session/close frees one.
const maxSessions = 64

// errResourceNotFound is the JSON-RPC code ACP uses for a missing resource.
const errResourceNotFound = -32002

// agent is the acp.Agent of one entity: every session the editor opens is attached to
// it, and every prompt becomes one composer_input message to it.
type agent struct {
	conn  *sdk.AgentSideConnection
	api   *entityAPI
	feed  *commandFeed
	out   *wireOut
	log   *zap.Logger
	spawn bool   // --spawn: spawn the entity on session/new if it does not exist
	ver   string // the adapter's version, for agentInfo
	life  context.Context

	editor editorShared // the sessions' MCP servers (editortools.go)

	mu       sync.Mutex
	closed   bool
	wg       sync.WaitGroup // session goroutines and prompts in flight
	sessions map[sdk.SessionId]*session
	conns    map[string]*entityConn // entities other than api's with sessions (entityconn.go)
}

// session is one ACP session, attached to one entity (see sessionid.go); its prompts run
// one at a time.
type session struct {
	id      sdk.SessionId
	api     *entityAPI   // the entity's: a.api for session/new, any for session/load
	feed    *commandFeed // the entity's slash commands
	tag     string       // random, in the keys of the session's messages
	ctx     context.Context
	cancel  context.CancelFunc
	prompts atomic.Int64
	tools   *editorTools // its MCP servers and their calls (editortools.go)

	mu   sync.Mutex
	turn *turn // the prompt in flight, nil when idle
}

// turn is a prompt in flight.
type turn struct {
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the turn has ended
}

var _ sdk.Agent = (*agent)(nil)

// enter registers work that Serve must wait for; false once Serve is shutting down.
func (a *agent) enter() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false
	}
	a.wg.Add(1)
	return true
}

// shutdown ends every session and waits for their goroutines and the prompts in flight.
func (a *agent) shutdown() {
	a.mu.Lock()
	a.closed = true
	for id, s := range a.sessions {
		s.cancel()
		delete(a.sessions, id)
	}
	a.mu.Unlock()
	a.wg.Wait()
}

func (a *agent) Initialize(_ context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	// Version negotiation: answer the client's version when the adapter speaks it,
	// otherwise the newest it speaks (the client then decides whether to go on).
	v := sdk.ProtocolVersion(sdk.ProtocolVersionNumber)
	if p.ProtocolVersion >= 1 && p.ProtocolVersion <= sdk.ProtocolVersionNumber {
		v = p.ProtocolVersion
	}
	title := "entityd " + a.api.url()
	return sdk.InitializeResponse{
		ProtocolVersion: v,
		AgentInfo:       &sdk.Implementation{Name: "entityd", Title: &title, Version: a.ver},
		AgentCapabilities: sdk.AgentCapabilities{
			// Text and resource links only (the baseline every agent supports).
			PromptCapabilities: sdk.PromptCapabilities{},
			LoadSession:        true, // load.go
			SessionCapabilities: sdk.SessionCapabilities{Close: &sdk.SessionCloseCapabilities{},
				List: &sdk.SessionListCapabilities{}}, // list.go
		},
		AuthMethods: []sdk.AuthMethod{},
	}, nil
}

func (a *agent) NewSession(ctx context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	// Tracked, so that Serve waits for it before it waits for the command feed it starts.
	if !a.enter() {
		return sdk.NewSessionResponse{}, sdk.NewInternalError(map[string]any{"error": "the adapter is shutting down"})
	}
	defer a.wg.Done()
	if !filepath.IsAbs(p.Cwd) { // the schema: "MUST be an absolute path"
		return sdk.NewSessionResponse{}, notAbsolute("/cwd")
	}
	if err := a.ensureEntity(ctx, a.spawn || metaSpawn(p.Meta)); err != nil {
		return sdk.NewSessionResponse{}, err
	}
	if err := a.feed.start(ctx, a.life); err != nil {
		return sdk.NewSessionResponse{}, toRequestError(err)
	}
	sctx, cancel := context.WithCancel(a.life)
	s := &session{api: a.api, feed: a.feed, tag: randomHex(12), ctx: sctx, cancel: cancel}
	if err := a.addSession(s, ""); err != nil {
		cancel()
		return sdk.NewSessionResponse{}, err
	}
	s.tools = newEditorTools(a, s, p.Cwd, p.McpServers)
	announced := a.out.afterAnswer(string(s.id))
	go func() {
		defer a.wg.Done()
		a.pushCommands(s, announced)
	}()
	a.startEditorTools(s, announced)
	a.log.Info("session attached", zap.String("session", string(s.id)), zap.String("entity", a.api.url()))
	return sdk.NewSessionResponse{SessionId: s.id, Meta: streamSessionMeta(s)}, nil
}

// streamSessionMeta is a session's _meta.entityd.stream_session: the random tag that
// names it on the entity's stream (its prompts' keys, its editor_tools offers and the
// editor_tool_call events for it), where its ACP id, the entity's URL, would not fit a
// key and is shared by every adapter attached to the entity.
func streamSessionMeta(s *session) map[string]any {
	return map[string]any{"entityd": map[string]any{"stream_session": s.tag}}
}

// addSession registers s under id, or under a free id of its entity when id is "" (see
// sessionid.go), and adds the session's goroutine to a.wg: the caller starts it.
func (a *agent) addSession(s *session, id sdk.SessionId) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.closed:
		return sdk.NewInternalError(map[string]any{"error": "the adapter is shutting down"})
	case len(a.sessions) >= maxSessions:
		return &sdk.RequestError{Code: -32600,
			Message: fmt.Sprintf("too many sessions (at most %d); close one with session/close", maxSessions)}
	case id == "":
		id = a.freeSessionIDLocked(s.api.url())
	case a.sessions[id] != nil:
		return &sdk.RequestError{Code: -32600, Message: "session " + string(id) + " is already open"}
	}
	s.id = id
	a.sessions[id] = s
	a.wg.Add(1)
	return nil
}

// notAbsolute is the answer to a path parameter that is not absolute (the schema: "MUST
// be an absolute path").
func notAbsolute(path string) error {
	return &sdk.RequestError{Code: -32602, Message: path[1:] + " must be an absolute path",
		Data: map[string]any{"details": []Detail{{Path: path, Message: "must be an absolute path"}}}}
}

// metaSpawn reads session/new's {"_meta":{"entityd":{"spawn":true}}}.
func metaSpawn(meta map[string]any) bool {
	e, ok := meta["entityd"].(map[string]any)
	if !ok {
		return false
	}
	spawn, _ := e["spawn"].(bool)
	return spawn
}

// ensureEntity checks that the entity exists and still takes messages, spawning it
// first when asked to.
func (a *agent) ensureEntity(ctx context.Context, spawn bool) error {
	e, err := a.api.get(ctx)
	if notFound(err) && spawn {
		created, serr := a.api.spawn(ctx)
		if serr != nil {
			return toRequestError(serr)
		}
		if created {
			a.log.Info("spawned the entity", zap.String("entity", a.api.url()))
		}
		e, err = a.api.get(ctx)
	}
	switch {
	case notFound(err):
		return &sdk.RequestError{Code: errResourceNotFound,
			Message: "entity " + a.api.url() + " does not exist; spawn it first, start the adapter with --spawn, " +
				`or send session/new with "_meta": {"entityd": {"spawn": true}}`,
			Data: map[string]any{"entity": a.api.url()}}
	case err != nil:
		return toRequestError(err)
	}
	switch e.Status {
	case "stopping", "stopped", "killed":
		return &sdk.RequestError{Code: -32600, Message: "entity " + a.api.url() + " is " + e.Status + " and takes no more messages",
			Data: map[string]any{"entity": a.api.url(), "status": e.Status}}
	}
	return nil
}

// pushCommands sends the session an available_commands_update once announced is closed
// (its session/new answer is out, or its loaded history is), and again whenever the
// entity's commands change, each a full snapshot; a snapshot identical to the last one
// sent is not sent again.
func (a *agent) pushCommands(s *session, announced <-chan struct{}) {
	defer a.out.forget(string(s.id), announced)
	select {
	case <-announced:
	case <-s.ctx.Done():
		return
	}
	var sent uint64
	for {
		snap, changed := s.feed.current()
		if snap.ver != sent {
			err := a.conn.SessionUpdate(s.ctx, sdk.SessionNotification{SessionId: s.id, Update: sdk.SessionUpdate{
				AvailableCommandsUpdate: &sdk.SessionAvailableCommandsUpdate{AvailableCommands: snap.cmds}}})
			if err != nil && s.ctx.Err() == nil {
				a.log.Warn("sending available commands", zap.String("session", string(s.id)), zap.Error(err))
			}
			sent = snap.ver
		}
		select {
		case <-changed:
		case <-s.ctx.Done():
			return
		}
	}
}

func (a *agent) session(id sdk.SessionId) (*session, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s := a.sessions[id]; s != nil {
		return s, nil
	}
	return nil, sdk.NewInvalidParams(map[string]any{"error": "unknown session " + string(id)})
}

// begin starts a turn. ACP runs one prompt per session at a time; the SDK cancels the
// prompt in flight when a new one arrives, so begin waits for that one to end.
func (s *session) begin(ctx context.Context) (*turn, error) {
	for {
		s.mu.Lock()
		prev := s.turn
		if prev == nil {
			tctx, cancel := context.WithCancel(ctx)
			stop := context.AfterFunc(s.ctx, cancel) // session/close and shutdown end the turn too
			t := &turn{ctx: tctx, cancel: func() { stop(); cancel() }, done: make(chan struct{})}
			s.turn = t
			s.mu.Unlock()
			return t, nil
		}
		s.mu.Unlock()
		prev.cancel()
		select {
		case <-prev.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (s *session) end(t *turn) {
	s.mu.Lock()
	if s.turn == t {
		s.turn = nil
	}
	s.mu.Unlock()
	t.cancel()
	close(t.done)
}

// interrupt cancels the turn in flight, if any.
func (s *session) interrupt() {
	s.mu.Lock()
	t := s.turn
	s.mu.Unlock()
	if t != nil {
		t.cancel()
	}
}

func (a *agent) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	s, err := a.session(p.SessionId)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	payload, err := composerInput(p.Prompt, s.feed.known)
	if err != nil {
		return sdk.PromptResponse{}, toRequestError(err)
	}
	if !a.enter() {
		return sdk.PromptResponse{}, sdk.NewInternalError(map[string]any{"error": "the adapter is shutting down"})
	}
	defer a.wg.Done()
	t, err := s.begin(ctx)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	defer s.end(t)
	endTurn, err := s.tools.beginTurn(t.ctx) // the session's first tool offer goes first
	if err != nil {
		return a.cancelled(s), nil
	}
	defer endTurn()

	key := fmt.Sprintf("acp-%s-%d-%s", s.tag, s.prompts.Add(1), randomHex(4))
	sent, err := s.api.sendComposerInput(t.ctx, key, payload)
	if err != nil {
		if t.ctx.Err() != nil {
			return a.cancelled(s), nil
		}
		return sdk.PromptResponse{}, toRequestError(err)
	}
	f := &replyFollower{api: s.api, key: key, seq: sent.Seq, offset: sent.Offset, tools: s.tools,
		log: a.log.With(zap.String("session", string(s.id)), zap.String("key", key)),
		emit: func(ctx context.Context, text string) {
			if err := a.conn.SessionUpdate(ctx, agentChunk(s.id, text)); err != nil && ctx.Err() == nil {
				a.log.Warn("sending a reply chunk", zap.Error(err))
			}
		}}
	outcome, err := f.follow(t.ctx)
	switch {
	case t.ctx.Err() != nil:
		f.abandonCalls()
		return a.cancelled(s), nil
	case err != nil:
		return sdk.PromptResponse{}, toRequestError(err)
	case outcome == runFailed:
		f.emit(t.ctx, f.failureNotice())
	}
	return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
}

// cancelled ends a turn the client cancelled — session/cancel, $/cancel_request, a new
// prompt replacing it, session/close: the entity gets SIGINT, then the prompt answers
// "cancelled". A turn that ended because the connection did (the SDK cancels every
// request then, and its Done channel is already closed) or the adapter is shutting down
// sends nothing: nobody is waiting for the answer.
func (a *agent) cancelled(s *session) sdk.PromptResponse {
	select {
	case <-a.conn.Done():
	default:
		if a.life.Err() == nil {
			a.interruptEntity(s.api)
		}
	}
	return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}
}

// interruptEntity sends SIGINT to the entity: its handler gets a SignalWake and can stop
// what the cancelled prompt started. The prompt answers "cancelled" after it is sent.
func (a *agent) interruptEntity(api *entityAPI) {
	ctx, cancel := context.WithTimeout(a.life, 10*time.Second)
	defer cancel()
	if err := api.signal(ctx, "SIGINT"); err != nil {
		a.log.Warn("sending SIGINT to the entity", zap.Error(err))
	}
}

// Cancel is session/cancel: the prompt in flight stops following the reply, the entity
// gets SIGINT, and the prompt answers "cancelled" (see cancelled).
func (a *agent) Cancel(_ context.Context, p sdk.CancelNotification) error {
	s, err := a.session(p.SessionId)
	if err != nil {
		return nil // a notification: nothing to answer, nothing to cancel
	}
	s.interrupt() // the SDK has cancelled the prompt's context already; this makes sure
	return nil
}

// CloseSession frees a session; its prompt in flight is cancelled as by session/cancel.
func (a *agent) CloseSession(_ context.Context, p sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	a.mu.Lock()
	s := a.sessions[p.SessionId]
	delete(a.sessions, p.SessionId)
	a.mu.Unlock()
	if s == nil {
		// resource not found, which clients (the TypeScript SDK) read as "already closed"
		return sdk.CloseSessionResponse{}, &sdk.RequestError{Code: errResourceNotFound,
			Message: "unknown session " + string(p.SessionId)}
	}
	s.interrupt()
	s.cancel()
	return sdk.CloseSessionResponse{}, nil
}

// toRequestError turns a failure into the JSON-RPC error the client gets: refusals of
// the server (and of the adapter's own checks) keep their message and details.
func toRequestError(err error) error {
	var pr *promptRefusal
	if errors.As(err, &pr) {
		return &sdk.RequestError{Code: -32602, Message: pr.Error(), Data: map[string]any{"details": pr.details}}
	}
	var ae *APIError
	if !errors.As(err, &ae) {
		return sdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	data := map[string]any{"status": ae.Status, "code": ae.Code, "message": ae.Message}
	if len(ae.Details) > 0 {
		data["details"] = ae.Details
	}
	code := -32603
	switch {
	case ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden:
		code = -32000 // ACP's "authentication required"
	case ae.Status == http.StatusNotFound:
		code = errResourceNotFound
	case ae.Status == http.StatusBadRequest || ae.Status == http.StatusRequestEntityTooLarge ||
		ae.Status == http.StatusUnprocessableEntity:
		code = -32602
	case ae.Status < 500:
		code = -32600
	}
	msg := "entityd: " + ae.Message
	for _, d := range ae.Details {
		msg += "; " + d.Path + " " + d.Message
	}
	return &sdk.RequestError{Code: code, Message: msg, Data: data}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
