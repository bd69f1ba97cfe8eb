package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/entityd/entityd/wire/editortool"
)

// deliverTimeout bounds the delivery of one result (retries included).
const deliverTimeout = 30 * time.Second

// toolCall is one editor_tool_call of the session, run once.
type toolCall struct {
	id     string
	call   editortool.Call
	bad    string // why the event cannot be run, when it cannot
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed once the result was delivered (or given up on)
	seq    int64         // the result message's seq (0: not delivered)

	whyMu sync.Mutex
	why   string // what cancelled it (the first reason given)
}

// resultKey is the key of the call's result message.
func (c *toolCall) resultKey() string { return editortool.ResultKey(c.id) }

// abort cancels the call, saying why.
func (c *toolCall) abort(why string) {
	c.whyMu.Lock()
	if c.why == "" {
		c.why = why
	}
	c.whyMu.Unlock()
	c.cancel()
}

// reason is what cancelled the call.
func (c *toolCall) reason() string {
	c.whyMu.Lock()
	defer c.whyMu.Unlock()
	if c.why == "" {
		return "the editor session ended"
	}
	return c.why
}

// dispatch runs the call id of this session (value: the event's value) unless it runs
// or ran already, and returns it; nil when the value names another session or the
// session has ended.
func (et *editorTools) dispatch(id string, value json.RawMessage) *toolCall {
	var call editortool.Call
	bad := ""
	if err := json.Unmarshal(value, &call); err != nil {
		var v struct {
			Session string `json:"session"`
		}
		_ = json.Unmarshal(value, &v)
		call.Session, bad = v.Session, "the editor_tool_call value is not a call: "+err.Error()
	}
	if call.Session != et.tag {
		return nil
	}
	if !editortool.ValidCallID(id) {
		et.log.Warn("an editor_tool_call with an unusable id is ignored", zap.String("call", id))
		return nil
	}
	et.mu.Lock()
	defer et.mu.Unlock()
	if c := et.calls[id]; c != nil {
		return c
	}
	if et.closed {
		return nil
	}
	if bad == "" {
		switch {
		case call.Server == "" || call.Tool == "":
			bad = "an editor_tool_call needs a server and a tool"
		case len(call.Arguments) > 0 && string(call.Arguments) != "null" && call.Arguments[0] != '{':
			bad = "the arguments of an editor_tool_call must be a JSON object"
		}
	}
	ctx, cancel := context.WithCancel(et.ctx)
	c := &toolCall{id: id, call: call, bad: bad, ctx: ctx, cancel: cancel, done: make(chan struct{})}
	et.calls[id] = c
	et.wg.Add(1)
	go func() {
		defer et.wg.Done()
		et.runCall(c)
	}()
	return c
}

// runCall reports the call to the editor, runs it, and delivers its result.
func (et *editorTools) runCall(c *toolCall) {
	defer func() {
		c.cancel()
		close(c.done)
		et.mu.Lock()
		et.finished = append(et.finished, c.id)
		for len(et.finished) > maxTrackedCalls {
			delete(et.calls, et.finished[0])
			et.finished = et.finished[1:]
		}
		et.mu.Unlock()
	}()
	log := et.log.With(zap.String("call", c.id), zap.String("server", c.call.Server), zap.String("tool", c.call.Tool))
	title := c.call.Server + "/" + c.call.Tool
	opts := []sdk.ToolCallStartOpt{sdk.WithStartStatus(sdk.ToolCallStatusPending), sdk.WithStartKind(et.kind(c.call))}
	if len(c.call.Arguments) > 0 {
		opts = append(opts, sdk.WithStartRawInput(c.call.Arguments))
	}
	et.update(sdk.StartToolCall(sdk.ToolCallId(c.id), title, opts...))

	res := editortool.Result{CallID: c.id, Session: c.call.Session, Server: c.call.Server, Tool: c.call.Tool}
	if declined := et.permit(c, title); declined != "" {
		res.IsError, res.Content = true, []json.RawMessage{editortool.TextContent("entityd acp: " + declined)}
	} else {
		select {
		case et.running <- struct{}{}:
			et.update(sdk.UpdateToolCall(sdk.ToolCallId(c.id), sdk.WithUpdateStatus(sdk.ToolCallStatusInProgress)))
			et.execute(c, &res)
			<-et.running
		case <-c.ctx.Done():
			et.cancelled(c, &res)
		}
	}
	status := sdk.ToolCallStatusCompleted
	if res.IsError {
		status = sdk.ToolCallStatusFailed
	}
	et.update(sdk.UpdateToolCall(sdk.ToolCallId(c.id), sdk.WithUpdateStatus(status), sdk.WithUpdateContent(acpContent(res.Content))))

	payload, err := json.Marshal(res)
	if err != nil {
		log.Error("encoding a tool result", zap.Error(err))
		return
	}
	limit := deliverTimeout
	if et.ctx.Err() != nil {
		limit = closeTimeout // the session (or the adapter) is ending: try briefly
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(et.ctx), limit)
	defer cancel()
	sent, err := et.api.sendWithRetries(ctx, editortool.ResultType, c.resultKey(), payload)
	if err != nil {
		log.Warn("delivering a tool result to the entity", zap.Error(err))
		return
	}
	c.seq = sent.Seq
	log.Info("ran an editor tool", zap.Bool("is_error", res.IsError), zap.Int64("result_seq", sent.Seq))
}

// Permission options offered when the adapter asks before a call (--confirm-tools).
const (
	optAllowOnce    = "allow_once"
	optAllowAlways  = "allow_always"
	optRejectOnce   = "reject_once"
	optRejectAlways = "reject_always"
)

// permit asks the editor whether to run the call (session/request_permission), when
// the adapter was told to; an "always" answer holds for the tool for the rest of the
// session. It returns why the call is not run, or "" to run it.
func (et *editorTools) permit(c *toolCall, title string) string {
	if !et.a.editor.confirm || c.bad != "" {
		return ""
	}
	key := c.call.Server + "/" + c.call.Tool
	et.mu.Lock()
	allowed, decided := et.always[key]
	et.mu.Unlock()
	if decided {
		if allowed {
			return ""
		}
		return "the person at the editor rejected " + key + " for this session"
	}
	kind := et.kind(c.call)
	tc := sdk.ToolCallUpdate{ToolCallId: sdk.ToolCallId(c.id), Title: &title, Kind: &kind}
	if len(c.call.Arguments) > 0 {
		tc.RawInput = c.call.Arguments
	}
	req := sdk.RequestPermissionRequest{SessionId: et.session, ToolCall: tc,
		Options: []sdk.PermissionOption{
			{OptionId: optAllowOnce, Name: "Allow", Kind: sdk.PermissionOptionKindAllowOnce},
			{OptionId: optAllowAlways, Name: "Always allow " + key, Kind: sdk.PermissionOptionKindAllowAlways},
			{OptionId: optRejectOnce, Name: "Reject", Kind: sdk.PermissionOptionKindRejectOnce},
			{OptionId: optRejectAlways, Name: "Always reject " + key, Kind: sdk.PermissionOptionKindRejectAlways},
		}}
	resp, err := et.a.conn.RequestPermission(c.ctx, req)
	switch {
	case c.ctx.Err() != nil:
		return "cancelled: " + c.reason()
	case err != nil:
		return "the editor did not answer the permission request: " + err.Error()
	case resp.Outcome.Selected == nil:
		return "cancelled: the editor cancelled the permission request"
	}
	switch resp.Outcome.Selected.OptionId {
	case optAllowOnce:
		return ""
	case optAllowAlways:
		et.mu.Lock()
		et.always[key] = true
		et.mu.Unlock()
		return ""
	case optRejectAlways:
		et.mu.Lock()
		et.always[key] = false
		et.mu.Unlock()
	}
	return "the person at the editor rejected the call"
}

// kind is the ACP tool kind of a call: "read" for a tool its server marks read-only.
func (et *editorTools) kind(call editortool.Call) sdk.ToolKind {
	for _, sv := range et.servers {
		if sv.name != call.Server {
			continue
		}
		_, _, tools := sv.snapshot()
		for _, t := range tools {
			var a struct {
				ReadOnly bool `json:"readOnlyHint"`
			}
			if t.Name == call.Tool && json.Unmarshal(t.Annotations, &a) == nil && a.ReadOnly {
				return sdk.ToolKindRead
			}
		}
	}
	return sdk.ToolKindOther
}

// update sends the editor a tool_call or tool_call_update of the session.
func (et *editorTools) update(u sdk.SessionUpdate) {
	if err := et.a.conn.SessionUpdate(et.ctx, sdk.SessionNotification{SessionId: et.session, Update: u}); err != nil && et.ctx.Err() == nil {
		et.log.Warn("sending a tool call update", zap.Error(err))
	}
}

// execute runs the call on its server and fills res.
func (et *editorTools) execute(c *toolCall, res *editortool.Result) {
	fail := func(msg string) {
		res.IsError, res.Content = true, []json.RawMessage{editortool.TextContent("entityd acp: " + msg)}
	}
	if c.bad != "" {
		fail(c.bad)
		return
	}
	var sv *toolServer
	var names []string
	for _, s := range et.servers {
		names = append(names, s.name)
		if s.name == c.call.Server {
			sv = s
		}
	}
	if sv == nil {
		fail(fmt.Sprintf("no MCP server %q in this editor session (it has: %s)", c.call.Server, orNone(names)))
		return
	}
	cs, why := sv.client()
	if cs == nil {
		fail(why)
		return
	}
	args := c.call.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	ctx, cancel := context.WithTimeout(c.ctx, et.lim.CallTimeout)
	defer cancel()
	out, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.call.Tool, Arguments: args})
	switch {
	case c.ctx.Err() != nil:
		et.cancelled(c, res)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		fail(fmt.Sprintf("the call took longer than %s and was cancelled", et.lim.CallTimeout))
	case err != nil:
		fail(fmt.Sprintf("MCP server %q failed the call: %v", c.call.Server, err))
	default:
		fillResult(res, out, et.lim.MaxResultBytes)
	}
}

// cancelled fills res for a call cancelled before it had a result.
func (et *editorTools) cancelled(c *toolCall, res *editortool.Result) {
	res.IsError, res.Content = true, []json.RawMessage{editortool.TextContent("entityd acp: cancelled: " + c.reason())}
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// fillResult copies an MCP result into res, cut to limit bytes of content: text
// blocks are kept while they fit (the last one shortened), other blocks and the
// structured content are dropped, and a note says so.
func fillResult(res *editortool.Result, out *mcp.CallToolResult, limit int) {
	res.IsError = out.IsError
	res.Content = make([]json.RawMessage, 0, len(out.Content))
	size := 0
	for _, c := range out.Content {
		raw, err := c.MarshalJSON()
		if err != nil {
			continue
		}
		res.Content = append(res.Content, raw)
		size += len(raw)
	}
	if out.StructuredContent != nil {
		if raw, err := json.Marshal(out.StructuredContent); err == nil && string(raw) != "null" {
			res.StructuredContent = raw
			size += len(raw)
		}
	}
	if size <= limit {
		return
	}
	res.Truncated, res.StructuredContent = true, nil
	note := editortool.TextContent(fmt.Sprintf("[entityd acp: the result was %d bytes, over the limit of %d; it was cut]", size, limit))
	budget := limit - len(note)
	kept := make([]json.RawMessage, 0, len(res.Content)+1)
	for _, raw := range res.Content {
		var b struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(raw, &b) != nil || b.Type != "text" {
			continue
		}
		if len(raw) <= budget {
			kept = append(kept, raw)
			budget -= len(raw)
			continue
		}
		// Shorten the text until its block fits (escapes make a block longer than its text).
		text := b.Text
		for budget > 32 && len(text) > 0 {
			over := len(editortool.TextContent(text)) - budget
			if over <= 0 {
				kept = append(kept, editortool.TextContent(text))
				break
			}
			text = cutUTF8(text, len(text)-max(over, 1))
		}
		break
	}
	res.Content = append(kept, note)
}

// cutUTF8 is s cut to at most n bytes, at a rune boundary.
func cutUTF8(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// acpContent is a result's content as ACP tool call content: text, images and resource
// links as they are, other blocks named.
func acpContent(content []json.RawMessage) []sdk.ToolCallContent {
	out := make([]sdk.ToolCallContent, 0, len(content))
	for _, raw := range content {
		var b struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			Data     string `json:"data"`
			MIMEType string `json:"mimeType"`
			URI      string `json:"uri"`
			Name     string `json:"name"`
		}
		if json.Unmarshal(raw, &b) != nil {
			continue
		}
		switch b.Type {
		case "text":
			out = append(out, sdk.ToolContent(sdk.TextBlock(b.Text)))
		case "image":
			out = append(out, sdk.ToolContent(sdk.ImageBlock(b.Data, b.MIMEType)))
		case "resource_link":
			out = append(out, sdk.ToolContent(sdk.ResourceLinkBlock(b.Name, b.URI)))
		default:
			out = append(out, sdk.ToolContent(sdk.TextBlock("["+b.Type+" content]")))
		}
	}
	return out
}
