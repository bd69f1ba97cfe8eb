package acp

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/wire/composer"
)

// The server's composer_input limits (its defaults; --composer-max-source and
// --composer-max-nodes). The adapter checks them itself so an oversized prompt is
// refused at once, with nothing sent.
const (
	maxSourceUnits = 100_000
	maxNodes       = 1_000
)

// promptRefusal is a prompt the adapter will not send, with {path,message} details in the
// server's words; the agent answers it as invalid params.
type promptRefusal struct{ details []Detail }

func (e *promptRefusal) Error() string {
	var b strings.Builder
	b.WriteString("prompt refused:")
	for _, d := range e.details {
		fmt.Fprintf(&b, " %s %s;", d.Path, d.Message)
	}
	return b.String()
}

// fileNode is a resource link's place in the source.
type fileNode struct {
	start, end int // UTF-16 code units
	raw, path  string
}

// composerInput turns an ACP prompt into ONE composer_input payload:
//
//   - text blocks are appended to the source as they are;
//   - a resource_link block appends its raw text ("@" + its name, or its URI without a
//     name) to the source, after a space unless the source is empty or already ends in
//     whitespace, and becomes a file node {"kind":"file","start","end","raw","path"} over
//     exactly that text; path is the file path of a file: URI, else the URI. Text that
//     follows a link directly gets a space in between, so words do not run together;
//   - "/name" tokens in the source become slash_command nodes
//     (composer.Serialize: a token at the start or after whitespace, followed
//     by whitespace or the end; "unknown": true when the entity has no such command) —
//     except inside a link's text;
//   - nodes are in source order; offsets are UTF-16 code units, as the server checks them;
//   - other blocks (images, audio, embedded resources, which the adapter does not
//     advertise) are refused, as are a source over maxSourceUnits and more than maxNodes
//     nodes.
func composerInput(blocks []sdk.ContentBlock, known func(string) bool) ([]byte, error) {
	var src strings.Builder
	units := 0
	var files []fileNode
	var refused []Detail
	afterLink := false
	for i, b := range blocks {
		switch {
		case b.Text != nil:
			t := b.Text.Text
			if afterLink && t != "" && !startsWithSpace(t) {
				src.WriteByte(' ')
				units++
			}
			src.WriteString(t)
			units += utf16Len(t)
			afterLink = false
		case b.ResourceLink != nil:
			raw, path := linkText(b.ResourceLink)
			if raw == "" || path == "" {
				refused = append(refused, Detail{Path: fmt.Sprintf("/prompt/%d", i), Message: "a resource link needs a name or a URI"})
				continue
			}
			if s := src.String(); s != "" && !endsWithSpace(s) {
				src.WriteByte(' ')
				units++
			}
			files = append(files, fileNode{start: units, end: units + utf16Len(raw), raw: raw, path: path})
			src.WriteString(raw)
			units += utf16Len(raw)
			afterLink = true
		default:
			refused = append(refused, Detail{Path: fmt.Sprintf("/prompt/%d", i),
				Message: blockKind(b) + " content is not supported; send text and resource links"})
		}
	}
	if len(blocks) == 0 || (units == 0 && len(refused) == 0) {
		refused = append(refused, Detail{Path: "/prompt", Message: "must not be empty"})
	}
	if units > maxSourceUnits {
		refused = append(refused, Detail{Path: "/source", Message: composer.MaxSourceUnitsMessage(maxSourceUnits)})
	}
	if len(refused) > 0 {
		return nil, &promptRefusal{details: refused}
	}
	source := src.String()
	payload := composer.Serialize(source, known)
	if len(files) == 0 {
		if n := countNodes(payload); n > maxNodes {
			return nil, &promptRefusal{details: []Detail{{Path: "/nodes", Message: composer.MaxNodesMessage(maxNodes)}}}
		}
		return payload, nil
	}
	return mergeFileNodes(source, payload, files)
}

// slashNode is what mergeFileNodes needs of a serialized slash_command node.
type slashNode struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// mergeFileNodes adds the file nodes to a serialized payload, in source order, dropping
// slash-command tokens that lie inside a link's text (nodes must not overlap).
func mergeFileNodes(source string, payload []byte, files []fileNode) ([]byte, error) {
	var parsed struct {
		Nodes []json.RawMessage `json:"nodes"`
	}
	if err := json.Unmarshal(payload, &parsed); err != nil {
		return nil, err
	}
	nodes := make([]byte, 0, len(payload)+64*len(files))
	count := 0
	add := func(n []byte) {
		if count == 0 {
			nodes = append(nodes, '[')
		} else {
			nodes = append(nodes, ',')
		}
		nodes = append(nodes, n...)
		count++
	}
	addFile := func(f fileNode) {
		var o rawjson.Object
		o.String("kind", composer.NodeKindFile).Int("start", int64(f.start)).Int("end", int64(f.end)).
			String("raw", f.raw).String("path", f.path)
		add(o.Bytes())
	}
	fi := 0
	for _, raw := range parsed.Nodes {
		var s slashNode
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		for fi < len(files) && files[fi].end <= s.Start {
			addFile(files[fi])
			fi++
		}
		if fi < len(files) && s.End > files[fi].start {
			continue // inside the link's text
		}
		add(raw)
	}
	for ; fi < len(files); fi++ {
		addFile(files[fi])
	}
	if count > maxNodes {
		return nil, &promptRefusal{details: []Detail{{Path: "/nodes", Message: composer.MaxNodesMessage(maxNodes)}}}
	}
	var o rawjson.Object
	o.String("source", source).Raw("nodes", append(nodes, ']'))
	return o.Bytes(), nil
}

// countNodes is the number of nodes of a serialized payload.
func countNodes(payload []byte) int {
	var parsed struct {
		Nodes []json.RawMessage `json:"nodes"`
	}
	_ = json.Unmarshal(payload, &parsed)
	return len(parsed.Nodes)
}

// linkText is a resource link's text in the source and its file node's path.
func linkText(l *sdk.ContentBlockResourceLink) (raw, path string) {
	path = l.Uri
	if u, err := url.Parse(l.Uri); err == nil && u.Scheme == "file" && u.Path != "" {
		path = u.Path
	}
	switch {
	case l.Name != "":
		raw = "@" + l.Name
	default:
		raw = l.Uri
	}
	if path == "" {
		path = l.Name
	}
	return raw, path
}

func blockKind(b sdk.ContentBlock) string {
	switch {
	case b.Image != nil:
		return "image"
	case b.Audio != nil:
		return "audio"
	case b.Resource != nil:
		return "embedded resource"
	}
	return "this"
}

// utf16Len is the length of s in UTF-16 code units, as JavaScript counts it.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

func startsWithSpace(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return isSpace(r)
}

func endsWithSpace(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return isSpace(r)
}

// isSpace is JavaScript's \s, the composer grammar's whitespace.
func isSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0x00a0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}
