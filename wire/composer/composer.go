package composer

import (
	"encoding/json"
	"errors"
	"fmt"
)

// InputType is the message type clients send for structured composer input; the
// send path validates it with Validate instead of the entity's inbox schemas.
const InputType = "composer_input"

// The node kinds the reference knows (its KnownComposerNode union). Any other kind is
// accepted and preserved, so these are for matching, not for rejecting.
const (
	NodeKindText         = "text"
	NodeKindSlashCommand = "slash_command"
	NodeKindFile         = "file"
	NodeKindSymbol       = "symbol"
	NodeKindBranch       = "branch"
)

// Limits are entityd additions (the reference has none); zero means unlimited.
type Limits struct {
	MaxSourceUnits int // max len(source) in UTF-16 code units
	MaxNodes       int // max len(nodes)
}

// ErrInvalid is returned by Parse for a payload that does not
// have the composer_input shape (for example a queued message edited into {"text": ...}),
// so callers can fall back to treating it as plain text.
var ErrInvalid = errors.New("inbox: not a composer_input payload")

// Input is a decoded composer_input payload, for handlers that act on nodes.
// The stored payload stays byte-for-byte as sent; this is a view over it.
type Input struct {
	// Source is the visible text. A lone surrogate the client sent shows as U+FFFD, which
	// is one UTF-16 unit too, so node offsets still index Source correctly.
	Source string
	Nodes  []Node
}

// Node is one node of a payload, known kind or not.
type Node struct {
	Kind  string
	Start int // UTF-16 code units
	End   int
	Raw   string
	Name  string // slash_command, symbol, branch
	Path  string // file
	// Fields holds every member of the node exactly as sent, including ones entityd does
	// not know (e.g. "unknown": true, "number": 42), so nothing a client sends is lost.
	Fields map[string]json.RawMessage
}

// Parse decodes an already-validated payload. It is lenient where the
// reference's helpers are (nodes: null counts as no nodes, kinds and fields are taken as
// they come) and fails with ErrInvalid only where no typed view is
// possible: not a JSON object, no string source, nodes not an array of objects, or a
// node whose start or end is not an integer.
func Parse(payload []byte) (*Input, error) {
	// One copy of the payload backs every Fields value, so callers may reuse their buffer.
	d := append([]byte(nil), payload...)
	r := jsonReader{data: d}
	top := skipWS(d, 0)
	if top == len(d) || d[top] != '{' {
		return nil, fmt.Errorf("%w: payload is not a JSON object", ErrInvalid)
	}
	source, nodes, end := r.sourceAndNodes(top)
	if !r.finish(end) {
		return nil, fmt.Errorf("%w: payload is not valid JSON", ErrInvalid)
	}
	if !source.is(d, '"') {
		return nil, fmt.Errorf("%w: source is not a string", ErrInvalid)
	}
	c := &Input{Source: decodeString(source.content(d))}
	if !nodes.present() || nodes.is(d, 'n') {
		return c, nil
	}
	if !nodes.is(d, '[') {
		return nil, fmt.Errorf("%w: nodes is not an array", ErrInvalid)
	}
	index := 0
	for el := r.elements(nodes.start); el.next(); index++ {
		n, end, err := r.parseNode(el.at)
		el.done(end)
		if err != nil {
			return nil, fmt.Errorf("%w: node %d: %v", ErrInvalid, index, err)
		}
		c.Nodes = append(c.Nodes, n)
	}
	return c, nil
}

// parseNode reads the node at d[at] and returns it with the offset just past it.
func (r *jsonReader) parseNode(at int) (Node, int, error) {
	d := r.data
	if d[at] != '{' {
		return Node{}, at, errors.New("not an object")
	}
	var n Node
	var start, end span
	n.Fields = make(map[string]json.RawMessage)
	it := r.members(at)
	for it.next() {
		key := decodeString(it.key.content(d))
		n.Fields[key] = d[it.val.start:it.val.end:it.val.end]
		// Last one wins for repeated keys, like JSON.parse.
		switch key {
		case "kind":
			n.Kind = stringOrEmpty(d, it.val)
		case "start":
			start = it.val
		case "end":
			end = it.val
		case "raw":
			n.Raw = stringOrEmpty(d, it.val)
		case "name":
			n.Name = stringOrEmpty(d, it.val)
		case "path":
			n.Path = stringOrEmpty(d, it.val)
		}
	}
	var ok bool
	if n.Start, ok = intField(start.bytes(d)); !ok {
		return Node{}, it.i, errors.New("start is not an integer")
	}
	if n.End, ok = intField(end.bytes(d)); !ok {
		return Node{}, it.i, errors.New("end is not an integer")
	}
	return n, it.i, nil
}

func stringOrEmpty(d []byte, v span) string {
	if !v.is(d, '"') {
		return ""
	}
	return decodeString(v.content(d))
}

// intField converts a JSON integer to int, refusing what float64 cannot hold exactly.
func intField(tok []byte) (int, bool) {
	f, ok := jsInteger(tok)
	if !ok || f > 1<<53 || f < -(1<<53) {
		return 0, false
	}
	return int(f), true
}

// IsKnown is the reference's isKnownComposerNode: one of the five kinds, carrying the
// string field that kind requires (text needs none). Handlers use it to decide whether
// the typed fields mean anything.
func (n Node) IsKnown() bool {
	switch n.Kind {
	case NodeKindText:
		return true
	case NodeKindSlashCommand, NodeKindSymbol, NodeKindBranch:
		return n.hasStringField("name")
	case NodeKindFile:
		return n.hasStringField("path")
	}
	return false
}

// hasStringField checks the field as sent: Name == "" cannot tell a missing name from "".
func (n Node) hasStringField(key string) bool {
	v, ok := n.Fields[key]
	return ok && len(v) > 0 && v[0] == '"'
}

// SlashCommandNodes are the slash_command nodes that carry a string name, in order
// (getSlashCommandNodes).
func (c *Input) SlashCommandNodes() []Node {
	var out []Node
	for _, n := range c.Nodes {
		if n.Kind == NodeKindSlashCommand && n.hasStringField("name") {
			out = append(out, n)
		}
	}
	return out
}

// HasSlashCommand reports whether any slash_command node names the command (name
// without the leading slash).
func (c *Input) HasSlashCommand(name string) bool {
	for _, n := range c.SlashCommandNodes() {
		if n.Name == name {
			return true
		}
	}
	return false
}

// FirstSlashCommand is the command a message invokes: the reference activates skills
// from the first slash_command node only.
func (c *Input) FirstSlashCommand() (Node, bool) {
	for _, n := range c.Nodes {
		if n.Kind == NodeKindSlashCommand && n.hasStringField("name") {
			return n, true
		}
	}
	return Node{}, false
}

// TextAfterNode is source.slice(n.End) on UTF-16 units: a command's arguments are plain
// text after its node, never nodes of their own. Later commands are included.
func (c *Input) TextAfterNode(n Node) string {
	return sliceFromUnit(c.Source, n.End)
}

// KnownNodes are the nodes IsKnown accepts, in order.
func (c *Input) KnownNodes() []Node {
	return c.filter(true)
}

// UnknownNodes are the other nodes (new kinds, or a known kind without its field), in
// order; they are kept so that newer clients' nodes reach handlers untouched.
func (c *Input) UnknownNodes() []Node {
	return c.filter(false)
}

func (c *Input) filter(known bool) []Node {
	var out []Node
	for _, n := range c.Nodes {
		if n.IsKnown() == known {
			out = append(out, n)
		}
	}
	return out
}
