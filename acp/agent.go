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
}

// session is one ACP session; its prompts run one at a time.
type session struct {
	id      sdk.SessionId
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
			PromptCapabilities:  sdk.PromptCapabilities{},
			SessionCapabilities: sdk.SessionCapabilities{Close: &sdk.SessionCloseCapabilities{}},
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
		return sdk.NewSessionResponse{}, &sdk.RequestError{Code: -32602, Message: "cwd must be an absolute path",
			Data: map[string]any{"details": []Detail{{Path: "/cwd", Message: "must be an absolute path"}}}}
	}
	if err := a.ensureEntity(ctx, a.spawn || metaSpawn(p.Meta)); err != nil {
		return sdk.NewSessionResponse{}, err
	}
	if err := a.feed.start(ctx, a.life); err != nil {
		return sdk.NewSessionResponse{}, toRequestError(err)
	}
	id := sdk.SessionId("sess_" + randomHex(12))
	sctx, cancel := context.WithCancel(a.life)
	s := &session{id: id, ctx: sctx, cancel: cancel}
	s.tools = newEditorTools(a, s, p.Cwd, p.McpServers)
	a.mu.Lock()
	switch {
	case a.closed:
		a.mu.Unlock()
		cancel()
		return sdk.NewSessionResponse{}, sdk.NewInternalError(map[string]any{"error": "the adapter is shutting down"})
	case len(a.sessions) >= maxSessions:
		a.mu.Unlock()
		cancel()
		return sdk.NewSessionResponse{}, &sdk.RequestError{Code: -32600,
			Message: fmt.Sprintf("too many sessions (at most %d); close one with session/close", maxSessions)}
	}
	a.sessions[id] = s
	a.wg.Add(1)
	a.mu.Unlock()
	announced := a.out.afterAnswer(string(id))
	go func() {
		defer a.wg.Done()
		a.pushCommands(s, announced)
	}()
	a.startEditorTools(s, announced)
	a.log.Info("session attached", zap.String("session", string(id)), zap.String("entity", a.api.url()))
	return sdk.NewSessionResponse{SessionId: id}, nil
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

// pushCommands sends the session an available_commands_update once its session/new
// answer is out, and again whenever the entity's commands change, each a full snapshot;
// a snapshot identical to the last one sent is not sent again.
func (a *agent) pushCommands(s *session, announced <-chan struct{}) {
	defer a.out.forget(string(s.id))
	select {
	case <-announced:
	case <-s.ctx.Done():
		return
	}
	var sent uint64
	for {
		snap, changed := a.feed.current()
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
	payload, err := composerInput(p.Prompt, a.feed.known)
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
		return a.cancelled(), nil
	}
	defer endTurn()

	key := fmt.Sprintf("acp-%s-%d-%s", s.id, s.prompts.Add(1), randomHex(4))
	sent, err := a.api.sendComposerInput(t.ctx, key, payload)
	if err != nil {
		if t.ctx.Err() != nil {
			return a.cancelled(), nil
		}
		return sdk.PromptResponse{}, toRequestError(err)
	}
	f := &replyFollower{api: a.api, key: key, seq: sent.Seq, offset: sent.Offset, tools: s.tools,
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
		return a.cancelled(), nil
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
func (a *agent) cancelled() sdk.PromptResponse {
	select {
	case <-a.conn.Done():
	default:
		if a.life.Err() == nil {
			a.interruptEntity()
		}
	}
	return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}
}

// interruptEntity sends SIGINT to the entity: its handler gets a SignalWake and can stop
// what the cancelled prompt started. The prompt answers "cancelled" after it is sent.
func (a *agent) interruptEntity() {
	ctx, cancel := context.WithTimeout(a.life, 10*time.Second)
	defer cancel()
	if err := a.api.signal(ctx, "SIGINT"); err != nil {
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
		return sdk.CloseSessionResponse{}, sdk.NewInvalidParams(map[string]any{"error": "unknown session " + string(p.SessionId)})
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
