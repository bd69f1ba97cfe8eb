package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/entityd/entityd/wire/editortool"
)

// Editor tools: the stdio MCP servers a session/new names run here, on the editor's
// machine, and the entity's handler calls their tools through its stream (package
// wire/editortool has the contract):
//
//  1. the session's servers start in the session's cwd (MCP's stdio transport, the
//     official Go SDK's client); their tools are offered to the entity as one
//     editor_tools message, again on every change (tools/list_changed, a server
//     exiting), and withdrawn (closed) when the session ends;
//  2. the handler writes an editor_tool_call event; the adapter sees it — in the turn's
//     own read of the stream (reply.go) or, between turns, in one follower of the main
//     stream the process's sessions share (editortools_watch.go) — and runs it once
//     (the call id is the key: seen twice, run once);
//  3. the editor sees the call as an ACP tool_call (pending), tool_call_update
//     (in_progress, then completed or failed with the content);
//  4. the result goes to the entity as an editor_tool_result message keyed by the call
//     id (a retried send appends nothing), which wakes the handler; a turn in flight
//     goes on until the run for the last result it waits for has ended.

// MCPLimits bound the MCP servers of a session; zero fields take the defaults.
type MCPLimits struct {
	// MaxServers per session (default 8); the others are refused (and reported).
	MaxServers int
	// MaxTools offered per session (default 256); the others are left out.
	MaxTools int
	// StartTimeout bounds a server's start: process, MCP initialize, tools/list
	// (default 30s).
	StartTimeout time.Duration
	// OfferWait is how long the first offer (and so the session's first prompt) waits
	// for servers still starting (default 10s); what starts later is offered then.
	OfferWait time.Duration
	// CallTimeout bounds one tool call (default 5m).
	CallTimeout time.Duration
	// MaxResultBytes bounds a result's content as sent to the entity (default 256 KiB);
	// a larger one is cut (text shortened, other blocks dropped) and marked truncated.
	MaxResultBytes int
	// MaxConcurrentCalls per session (default 4); more wait, pending.
	MaxConcurrentCalls int
}

func (l MCPLimits) withDefaults() MCPLimits {
	set := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	setD := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	set(&l.MaxServers, 8)
	set(&l.MaxTools, 256)
	setD(&l.StartTimeout, 30*time.Second)
	setD(&l.OfferWait, 10*time.Second)
	setD(&l.CallTimeout, 5*time.Minute)
	set(&l.MaxResultBytes, 256<<10)
	set(&l.MaxConcurrentCalls, 4)
	return l
}

// maxOfferBytes bounds an editor_tools message (the server takes 1 MiB bodies).
const maxOfferBytes = 768 << 10

// maxTrackedCalls bounds the finished calls a session remembers (to run none twice).
const maxTrackedCalls = 4096

// closeTimeout bounds what a session's end still sends: results of calls it cancelled
// and its closing offer.
const closeTimeout = 3 * time.Second

// editorShared is the adapter's part of editor tools that its sessions share.
type editorShared struct {
	limits  MCPLimits
	confirm bool // ask the editor (session/request_permission) before each call
	watch   callWatch
}

// editorTools is one session's MCP servers and the calls of its tools.
type editorTools struct {
	a       *agent
	session sdk.SessionId   // the ACP session, in updates to the editor
	tag     string          // the session as the entity's stream names it (its messages' keys carry it)
	api     *entityAPI      // the session's entity
	ctx     context.Context // the session's: ends with session/close or the adapter
	cwd     string
	log     *zap.Logger
	lim     MCPLimits
	servers []*toolServer  // in session/new's order; fixed
	changed chan struct{}  // (cap 1) something to offer again
	offered chan struct{}  // closed once the first offer was sent or given up on
	running chan struct{}  // call slots
	wg      sync.WaitGroup // server goroutines and calls

	mu        sync.Mutex
	closed    bool                 // the session ended: no new calls
	calls     map[string]*toolCall // by id
	finished  []string             // ids of finished calls, oldest first
	version   int64                // of the last offer made (starts at the clock's microseconds, see newEditorTools)
	offers    int                  // offers made
	lastOffer []byte               // the last one sent, as JSON without the version
	reported  map[string]string    // server → the status last told to the editor
	turn      bool                 // a prompt is in flight
	turnSeq   int64                // its message's seq (0: not sent yet)
	deferred  []deferredCall       // calls the watcher left to the turn
	always    map[string]bool      // "server/tool" → the person allowed (true) or rejected (false) it for the session
}

// deferredCall is a call the shared follower saw while a turn, which reads the same
// events, was in flight: the turn runs it (in order with its reply text), else it is
// run when the turn ends.
type deferredCall struct {
	id    string
	value json.RawMessage
	seq   int64
}

// newEditorTools prepares a session's servers (nothing starts before run).
func newEditorTools(a *agent, s *session, cwd string, servers []sdk.McpServer) *editorTools {
	lim := a.editor.limits.withDefaults()
	et := &editorTools{a: a, session: s.id, tag: s.tag, api: s.api, ctx: s.ctx, cwd: cwd, lim: lim,
		log:     a.log.With(zap.String("session", string(s.id))),
		changed: make(chan struct{}, 1), offered: make(chan struct{}),
		running: make(chan struct{}, lim.MaxConcurrentCalls), calls: map[string]*toolCall{}, reported: map[string]string{},
		always: map[string]bool{},
		// Versions (and so the offers' keys) start from the clock, not from 1: a session
		// attached again under the same id (session/load, another adapter) offers with
		// new keys and higher versions than the offers of its earlier life.
		version: time.Now().UnixMicro()}
	names := map[string]bool{}
	for i, m := range servers {
		sv := &toolServer{et: et, relist: make(chan struct{}, 1)}
		switch {
		case m.Stdio != nil:
			sv.name, sv.cfg = m.Stdio.Name, m.Stdio
			sv.status = editortool.StatusStarting
		case m.Http != nil:
			sv.name, sv.status, sv.err = m.Http.Name, editortool.StatusRefused, "an http MCP server; entityd acp runs stdio servers only"
		case m.Sse != nil:
			sv.name, sv.status, sv.err = m.Sse.Name, editortool.StatusRefused, "an sse MCP server; entityd acp runs stdio servers only"
		case m.Acp != nil:
			sv.name, sv.status, sv.err = m.Acp.Name, editortool.StatusRefused, "an acp MCP server; entityd acp runs stdio servers only"
		default:
			sv.status, sv.err = editortool.StatusRefused, "an MCP server of an unknown transport"
		}
		if sv.name == "" {
			sv.name = fmt.Sprintf("server-%d", i+1)
		}
		switch {
		case names[sv.name]:
			sv.status, sv.err, sv.cfg = editortool.StatusRefused, "another server of this session has the same name", nil
		case i >= lim.MaxServers:
			sv.status, sv.err, sv.cfg = editortool.StatusRefused, fmt.Sprintf("over the limit of %d MCP servers per session", lim.MaxServers), nil
		}
		names[sv.name] = true
		et.servers = append(et.servers, sv)
	}
	if len(et.servers) == 0 {
		close(et.offered)
	}
	return et
}

// startEditorTools runs the session's editor tools (s.tools, from newEditorTools with
// the servers session/new or session/load named) in a goroutine Serve waits for.
// announced is closed once the answer that announces the session is out.
func (a *agent) startEditorTools(s *session, announced <-chan struct{}) {
	if s.tools == nil || !a.enter() {
		return
	}
	go func() {
		defer a.wg.Done()
		s.tools.run(announced)
	}()
}

// run starts the servers, keeps the entity's offer current and, once the session
// ends, stops the calls and the servers and withdraws the offer. announced is closed
// once the session/new answer is out (updates to the editor wait for it).
func (et *editorTools) run(announced <-chan struct{}) {
	if len(et.servers) == 0 {
		return
	}
	et.a.editor.watch.start(et.ctx, et.a)
	settled := make(chan struct{})
	var starting sync.WaitGroup
	for _, sv := range et.servers {
		if sv.status != editortool.StatusStarting {
			continue
		}
		starting.Add(1)
		et.wg.Add(1)
		go func() {
			defer et.wg.Done()
			sv.start()
			starting.Done()
			et.poke()
			sv.follow() // list changes and the process's end, until the session ends
		}()
	}
	go func() { starting.Wait(); close(settled) }()

	first := time.NewTimer(et.lim.OfferWait)
	defer first.Stop()
	select {
	case <-settled:
	case <-first.C:
	case <-et.ctx.Done():
	}
	for et.ctx.Err() == nil {
		et.offer()
		select {
		case <-et.offered:
		default:
			close(et.offered)
		}
		et.report(announced)
		select {
		case <-et.changed:
		case <-et.ctx.Done():
		}
	}
	select {
	case <-et.offered:
	default:
		close(et.offered)
	}
	et.stop()
}

// poke asks run for a new offer.
func (et *editorTools) poke() {
	select {
	case et.changed <- struct{}{}:
	default:
	}
}

// awaitOffer waits until the session's first offer is out (or given up on), so the
// first prompt reaches the entity after the tools it may use.
func (et *editorTools) awaitOffer(ctx context.Context) error {
	select {
	case <-et.offered:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// buildOffer is the session's current offer (Version not set).
func (et *editorTools) buildOffer() editortool.Offer {
	o := editortool.Offer{Session: et.tag, Servers: []editortool.Server{}, Tools: []editortool.Tool{}}
	size := 512
	for _, sv := range et.servers {
		st, msg, tools := sv.snapshot()
		left := 0
		for _, t := range tools {
			n := len(t.InputSchema) + len(t.Description) + len(t.Annotations) + len(t.Name) + len(t.Title) + 128
			if len(o.Tools) >= et.lim.MaxTools || size+n > maxOfferBytes {
				left++
				continue
			}
			size += n
			o.Tools = append(o.Tools, t)
		}
		if left > 0 {
			msg = fmt.Sprintf("%d of its tools left out (at most %d tools, %d bytes per session)", left, et.lim.MaxTools, maxOfferBytes)
		}
		o.Servers = append(o.Servers, editortool.Server{Name: sv.name, Status: st, Error: msg})
	}
	return o
}

// offer sends the current offer unless it equals the last one sent; a failed send is
// retried a few times (then the next change tries again).
func (et *editorTools) offer() {
	o := et.buildOffer()
	same, _ := json.Marshal(o)
	et.mu.Lock()
	if bytes.Equal(same, et.lastOffer) {
		et.mu.Unlock()
		return
	}
	et.version++
	et.offers++
	o.Version = et.version
	et.mu.Unlock()
	payload, err := json.Marshal(o)
	if err != nil {
		et.log.Error("encoding the editor tools offer", zap.Error(err))
		return
	}
	key := editortool.OfferKey(et.tag, o.Version)
	ctx, cancel := context.WithTimeout(et.ctx, deliverTimeout)
	defer cancel()
	if _, err := et.api.sendWithRetries(ctx, editortool.OfferType, key, payload); err != nil {
		if et.ctx.Err() == nil {
			et.log.Warn("offering the editor's MCP tools to the entity", zap.Error(err))
		}
		return
	}
	et.mu.Lock()
	et.lastOffer = same
	et.mu.Unlock()
	et.log.Info("offered the editor's MCP tools to the entity", zap.Int64("version", o.Version), zap.Int("tools", len(o.Tools)))
}

// report tells the editor (an agent_message_chunk, once the session/new answer is out)
// and the log about servers that could not start or have ended since the last report.
func (et *editorTools) report(announced <-chan struct{}) {
	var lines []string
	for _, sv := range et.servers {
		st, msg, _ := sv.snapshot()
		et.mu.Lock()
		prev := et.reported[sv.name]
		et.reported[sv.name] = st
		et.mu.Unlock()
		if st == prev {
			continue
		}
		switch st {
		case editortool.StatusFailed, editortool.StatusRefused:
			lines = append(lines, fmt.Sprintf("entityd: MCP server %q did not start (%s); its tools are not offered.", sv.name, msg))
			et.log.Warn("an MCP server of the session did not start", zap.String("server", sv.name), zap.String("status", st), zap.String("error", msg))
		case editortool.StatusExited:
			lines = append(lines, fmt.Sprintf("entityd: MCP server %q exited (%s); its tools are withdrawn.", sv.name, msg))
			et.log.Warn("an MCP server of the session exited", zap.String("server", sv.name), zap.String("error", msg))
		}
	}
	if len(lines) == 0 {
		return
	}
	select {
	case <-announced:
	case <-et.ctx.Done():
		return
	}
	for _, l := range lines {
		if err := et.a.conn.SessionUpdate(et.ctx, agentChunk(et.session, l+"\n")); err != nil && et.ctx.Err() == nil {
			et.log.Warn("reporting an MCP server to the editor", zap.Error(err))
		}
	}
}

// stop ends the session's calls (their results, "cancelled", still go to the entity),
// stops the servers, and withdraws the offer.
func (et *editorTools) stop() {
	et.mu.Lock()
	et.closed = true
	for _, c := range et.calls {
		c.abort("the editor session ended")
	}
	sent := et.offers > 0
	et.version++
	version := et.version
	et.mu.Unlock()
	et.wg.Wait() // calls delivered, follow loops ended
	var stopping sync.WaitGroup
	for _, sv := range et.servers {
		stopping.Add(1)
		go func() { defer stopping.Done(); sv.stop() }()
	}
	if sent {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(et.ctx), closeTimeout)
		payload, _ := json.Marshal(editortool.Offer{Session: et.tag, Version: version, Closed: true,
			Servers: []editortool.Server{}, Tools: []editortool.Tool{}})
		if _, err := et.api.sendWithRetries(ctx, editortool.OfferType, editortool.OfferKey(et.tag, version), payload); err != nil {
			et.log.Warn("withdrawing the editor's MCP tools", zap.Error(err))
		}
		cancel()
	}
	stopping.Wait()
}

// beginTurn marks a prompt in flight once the first offer is out; the returned func
// ends the turn and runs the calls left to it that it did not run.
func (et *editorTools) beginTurn(ctx context.Context) (func(), error) {
	if et == nil { // a session made without editor tools
		return func() {}, nil
	}
	if err := et.awaitOffer(ctx); err != nil {
		return nil, err
	}
	et.mu.Lock()
	et.turn, et.turnSeq = true, 0
	et.mu.Unlock()
	return func() {
		et.mu.Lock()
		et.turn = false
		left := et.deferred
		et.deferred = nil
		et.mu.Unlock()
		for _, d := range left {
			et.dispatch(d.id, d.value)
		}
	}, nil
}

// turnSent records the seq of the turn's message: calls before it are not the turn's.
func (et *editorTools) turnSent(seq int64) {
	if et == nil {
		return
	}
	et.mu.Lock()
	et.turnSeq = seq
	var now []deferredCall
	kept := et.deferred[:0]
	for _, d := range et.deferred {
		if d.seq <= seq {
			now = append(now, d)
		} else {
			kept = append(kept, d)
		}
	}
	et.deferred = kept
	et.mu.Unlock()
	for _, d := range now {
		et.dispatch(d.id, d.value)
	}
}

// watched is a call the shared follower saw at seq: run now, unless the turn in
// flight will see it too (it follows the stream from its message on).
func (et *editorTools) watched(id string, value json.RawMessage, seq int64) {
	et.mu.Lock()
	if et.turn && (et.turnSeq == 0 || seq > et.turnSeq) {
		et.deferred = append(et.deferred, deferredCall{id: id, value: value, seq: seq})
		et.mu.Unlock()
		return
	}
	et.mu.Unlock()
	et.dispatch(id, value)
}

// sendWithRetries sends a message, retrying failures that may pass (the network, the
// server's 5xx) with backoff until ctx ends.
func (c *entityAPI) sendWithRetries(ctx context.Context, typ, key string, payload []byte) (*sendResult, error) {
	b := newBackoff()
	for {
		r, err := c.send(ctx, typ, key, payload)
		if err == nil || !retryable(err) || ctx.Err() != nil {
			return r, err
		}
		if !b.wait(ctx) {
			return nil, err
		}
	}
}
