// Package editortool is the contract between an editor adapter that runs tools on the
// editor's machine (`entityd acp`, which starts the stdio MCP servers an ACP
// `session/new` names) and an entity's handler that calls them. Everything goes through
// the entity's main stream, so both sides need nothing but the entity API:
//
//   - the adapter offers a session's tools with an inbox message of type OfferType
//     (payload Offer, key OfferKey), at session start, whenever the list changes, and a
//     last one with Closed set when the session ends;
//   - the handler calls a tool by writing a state event of type CallEventType (key: the
//     call id, value Call) — runtime.Context.CallEditorTool writes it;
//   - the adapter, which follows the main stream, runs the call on the MCP server and
//     sends the outcome as an inbox message of type ResultType (payload Result, key
//     ResultKey(call id): the idempotency key, so a retried delivery appends nothing),
//     which wakes the handler.
//
// The package imports nothing of the database side; the server, the SDK and the adapter
// share it.
package editortool

import (
	"encoding/json"
	"strconv"
	"strings"
)

// The message and event types.
const (
	// OfferType is the inbox message type of an Offer (adapter → entity).
	OfferType = "editor_tools"
	// ResultType is the inbox message type of a Result (adapter → entity).
	ResultType = "editor_tool_result"
	// CallEventType is the state event type of a Call (the handler writes it).
	CallEventType = "editor_tool_call"
)

// Server statuses in an Offer.
const (
	StatusStarting = "starting" // not ready yet (an offer made while it starts); no tools
	StatusRunning  = "running"  // started; its tools are in the offer
	StatusFailed   = "failed"   // could not start (Error says why); no tools
	StatusExited   = "exited"   // started, then its process ended; no tools
	StatusRefused  = "refused"  // not started: a transport the adapter does not run, or over a limit
)

// Offer is the tools one editor session offers, as a whole: each offer replaces the
// session's offers of lower Version (versions grow; the adapter starts them from its
// clock, so a session attached again under the same id offers above its earlier life).
// A session whose servers all failed still gets an offer, with no tools and the
// failures in Servers.
type Offer struct {
	Session string `json:"session"`
	Version int64  `json:"version"`
	// Closed: the session ended; its tools are gone and calls to it get no answer.
	Closed  bool     `json:"closed,omitempty"`
	Servers []Server `json:"servers"`
	Tools   []Tool   `json:"tools"`
}

// Server is one MCP server of the session and what became of it.
type Server struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// Tool is one tool of a running server, as MCP's tools/list describes it.
type Tool struct {
	Server      string `json:"server"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// InputSchema is the tool's JSON Schema for its arguments (an object schema).
	InputSchema json.RawMessage `json:"input_schema"`
	// Annotations are MCP's tool annotations (readOnlyHint, destructiveHint, …) as the
	// server sent them, when it sent any.
	Annotations json.RawMessage `json:"annotations,omitempty"`
}

// Call is the value of a CallEventType event: which tool of which session to run with
// which arguments. The event's key is the call id (see ValidCallID).
type Call struct {
	Session string `json:"session"`
	Server  string `json:"server"`
	Tool    string `json:"tool"`
	// Arguments is a JSON object (MCP's arguments; null or absent means {}).
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Result is the payload of a ResultType message: the outcome of one call.
type Result struct {
	CallID  string `json:"call_id"`
	Session string `json:"session"`
	Server  string `json:"server"`
	Tool    string `json:"tool"`
	// IsError: the tool failed (its own error result), or the call could not be run
	// (unknown server, timeout, cancelled, the server's process ended, …; the content's
	// text says which).
	IsError bool `json:"is_error"`
	// Content is MCP content blocks ({"type":"text","text":…}, images, resource links,
	// …) as the server returned them.
	Content []json.RawMessage `json:"content"`
	// StructuredContent is the tool's structured result, when it gave one.
	StructuredContent json.RawMessage `json:"structured_content,omitempty"`
	// Truncated: the result was over the adapter's size limit and was cut (text blocks
	// shortened, other blocks and the structured content dropped).
	Truncated bool `json:"truncated,omitempty"`
}

// Text joins the text blocks of the result's content with newlines.
func (r *Result) Text() string {
	var parts []string
	for _, raw := range r.Content {
		var b struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(raw, &b) == nil && b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// TextContent is one MCP text content block.
func TextContent(text string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{"text", text})
	return b
}

// OfferKey is the idempotency key of a session's offer number version.
func OfferKey(session string, version int64) string {
	return "editor-tools-" + session + "-" + strconv.FormatInt(version, 10)
}

// ResultKey is the idempotency key of the result of call id.
func ResultKey(callID string) string { return "editor-tool-result-" + callID }

// MaxCallIDBytes bounds a call id (it is part of the result's key, which the server
// bounds at 256 characters).
const MaxCallIDBytes = 128

// ValidCallID reports whether id may name a call: 1 to MaxCallIDBytes letters, digits,
// '-', '_', '.' or ':'.
func ValidCallID(id string) bool {
	if id == "" || len(id) > MaxCallIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// PromptKeyPrefix starts the key of every composer_input the ACP adapter sends for a
// prompt: "acp-<session>-<n>-<nonce>" (n counts the session's prompts, nonce is hex).
const PromptKeyPrefix = "acp-"

// PromptSession is the editor session a prompt message came from, read from its key
// ("acp-<session>-<n>-<nonce>"); ok is false for any other key.
func PromptSession(key string) (session string, ok bool) {
	rest, found := strings.CutPrefix(key, PromptKeyPrefix)
	if !found {
		return "", false
	}
	i := strings.LastIndexByte(rest, '-')
	if i <= 0 || !isHex(rest[i+1:]) {
		return "", false
	}
	rest = rest[:i]
	j := strings.LastIndexByte(rest, '-')
	if j <= 0 || !isDigits(rest[j+1:]) {
		return "", false
	}
	return rest[:j], true
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// InboxSchemas are JSON Schemas (draft-07) of the two message types the adapter sends.
// An entity type that declares inbox schemas accepts only the message types it names,
// so a type whose handler uses editor tools adds these to its own (a type that declares
// none accepts every type already).
func InboxSchemas() map[string]json.RawMessage {
	return map[string]json.RawMessage{
		OfferType: json.RawMessage(`{"type":"object","required":["session","version","servers","tools"],` +
			`"properties":{"session":{"type":"string","minLength":1},"version":{"type":"integer"},"closed":{"type":"boolean"},` +
			`"servers":{"type":"array","items":{"type":"object","required":["name","status"]}},` +
			`"tools":{"type":"array","items":{"type":"object","required":["server","name","input_schema"]}}}}`),
		ResultType: json.RawMessage(`{"type":"object","required":["call_id","session","server","tool","is_error","content"],` +
			`"properties":{"call_id":{"type":"string","minLength":1},"session":{"type":"string"},"server":{"type":"string"},` +
			`"tool":{"type":"string"},"is_error":{"type":"boolean"},"content":{"type":"array"},"truncated":{"type":"boolean"}}}`),
	}
}
