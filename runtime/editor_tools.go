package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/entityd/entityd/wire"
	"github.com/entityd/entityd/wire/editortool"
)

// Editor tools are tools that run on the machine of a person's editor: `entityd acp`
// starts the stdio MCP servers the editor names in an ACP session and offers their tools
// to the entity (an inbox message of type editor_tools per change, package
// wire/editortool). A handler calls one with CallEditorTool, which writes an
// editor_tool_call event; the adapter runs it when the run commits and sends the outcome
// back as an editor_tool_result message, which wakes the handler again (read it with
// EditorToolResultOf). A call is asynchronous: the run that makes it ends, and the
// result is a wake of its own.
type (
	// EditorToolset is one editor session's offer: its servers and their tools.
	EditorToolset = editortool.Offer
	// EditorTool is one tool of an editor session.
	EditorTool = editortool.Tool
	// EditorToolResult is the outcome of one call.
	EditorToolResult = editortool.Result
)

// EditorToolCall is a call of one tool of an editor session.
type EditorToolCall struct {
	// Session is the editor session whose tools to use (EditorToolset.Session).
	Session string
	// Server and Tool name the tool (EditorTool.Server, EditorTool.Name).
	Server, Tool string
	// Arguments must marshal to a JSON object (nil: {}).
	Arguments any
	// ID names the call (its result's CallID); empty: one is made up.
	ID string
}

// EditorToolInboxSchemas are the inbox schemas of the messages `entityd acp` sends (an
// entity type that declares InboxSchemas accepts only the types it names: add these to
// use editor tools; a type that declares none accepts them already).
func EditorToolInboxSchemas() map[string]json.RawMessage { return editortool.InboxSchemas() }

// EditorToolResultOf returns the result an editor_tool_result message carries (ok is
// false for any other message, or a payload of another shape).
func EditorToolResultOf(w InboxWake) (*EditorToolResult, bool) {
	if w.Type != editortool.ResultType {
		return nil, false
	}
	var r EditorToolResult
	if json.Unmarshal(w.Payload, &r) != nil || r.CallID == "" {
		return nil, false
	}
	return &r, true
}

// EditorToolsets returns the current offer of every editor session that has offered
// tools and not closed since, in the order the sessions first offered them. It reads the
// entity's inbox (see State).
func (c *Context) EditorToolsets() []EditorToolset {
	st := c.State()
	latest := map[string]EditorToolset{}
	var order []string
	consider := func(o EditorToolset) {
		prev, seen := latest[o.Session]
		if !seen {
			order = append(order, o.Session)
		} else if prev.Version > o.Version {
			return
		}
		latest[o.Session] = o
	}
	marker := []byte(`"` + editortool.OfferType + `"`)
	for _, key := range st.Keys(wire.InboxEventType) {
		raw, _ := st.Get(wire.InboxEventType, key)
		if !bytes.Contains(raw, marker) { // cheap skip of every other message
			continue
		}
		if o, ok := offerOf(raw); ok {
			consider(o)
		}
	}
	if w, ok := c.Wake.(InboxWake); ok && w.Type == editortool.OfferType {
		var o EditorToolset
		if json.Unmarshal(w.Payload, &o) == nil && o.Session != "" {
			consider(o)
		}
	}
	out := make([]EditorToolset, 0, len(order))
	for _, s := range order {
		if o := latest[s]; !o.Closed {
			out = append(out, o)
		}
	}
	return out
}

// offerOf reads an inbox row holding an editor_tools message.
func offerOf(row json.RawMessage) (EditorToolset, bool) {
	var m struct {
		MessageType string          `json:"message_type"`
		Payload     json.RawMessage `json:"payload"`
	}
	if json.Unmarshal(row, &m) != nil || m.MessageType != editortool.OfferType {
		return EditorToolset{}, false
	}
	var o EditorToolset
	if json.Unmarshal(m.Payload, &o) != nil || o.Session == "" {
		return EditorToolset{}, false
	}
	return o, true
}

// EditorSession is the editor session this wake came from: the session of an
// editor_tool_result or editor_tools message, or of a prompt the ACP adapter sent (its
// key names the session, editortool.PromptSession); "" for any other wake.
func (c *Context) EditorSession() string {
	w, ok := c.Wake.(InboxWake)
	if !ok {
		return ""
	}
	switch w.Type {
	case editortool.ResultType, editortool.OfferType:
		var v struct {
			Session string `json:"session"`
		}
		_ = json.Unmarshal(w.Payload, &v)
		return v.Session
	}
	s, _ := editortool.PromptSession(w.Key)
	return s
}

// EditorTools returns the toolset of the editor session this wake came from
// (EditorSession), or, for a wake from no session, the only open one; ok is false when
// there is none (no session, several sessions and none named by the wake, or the
// session closed).
func (c *Context) EditorTools() (EditorToolset, bool) {
	sets := c.EditorToolsets()
	if s := c.EditorSession(); s != "" {
		for _, o := range sets {
			if o.Session == s {
				return o, true
			}
		}
		return EditorToolset{}, false
	}
	if len(sets) == 1 {
		return sets[0], true
	}
	return EditorToolset{}, false
}

// CallEditorTool asks the editor to run a tool and returns the call's id. It writes an
// editor_tool_call event (committed with this run, like every write; a run that fails
// calls nothing); the adapter running the session sees it, runs the tool on the
// editor's machine, and sends an editor_tool_result message with this id as CallID,
// which wakes the handler. A session that is gone answers nothing, so a handler that
// must not wait forever sets a timer (Schedule). The event is the runtime's own: the
// type's state schemas do not apply to it.
func (c *Context) CallEditorTool(call EditorToolCall) (string, error) {
	if call.Session == "" || call.Server == "" || call.Tool == "" {
		return "", errors.New("runtime: an editor tool call needs a session, a server and a tool")
	}
	if call.ID == "" {
		call.ID = "call_" + uuid.NewString()
	}
	if !editortool.ValidCallID(call.ID) {
		return "", fmt.Errorf("runtime: call id %q: at most %d letters, digits, '-', '_', '.' or ':'", call.ID, editortool.MaxCallIDBytes)
	}
	args := json.RawMessage(`{}`)
	if call.Arguments != nil {
		raw, err := toJSON(call.Arguments)
		if err != nil {
			return "", fmt.Errorf("runtime: editor tool arguments: %w", err)
		}
		if trimmed := bytes.TrimSpace(raw); len(trimmed) == 0 || trimmed[0] != '{' {
			if !bytes.Equal(trimmed, []byte("null")) {
				return "", errors.New("runtime: editor tool arguments must be a JSON object")
			}
		} else {
			args = raw
		}
	}
	value, err := json.Marshal(editortool.Call{Session: call.Session, Server: call.Server, Tool: call.Tool, Arguments: args})
	if err != nil {
		return "", err
	}
	c.eff.own(wire.Event{Type: editortool.CallEventType, Key: call.ID, Value: value, Operation: wire.OpInsert,
		Timestamp: time.Now()}.Marshal())
	return call.ID, nil
}
