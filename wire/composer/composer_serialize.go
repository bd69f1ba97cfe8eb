package composer

import (
	"unicode/utf8"

	"github.com/entityd/entityd/internal/rawjson"
)

// Serialize builds a composer_input payload from plain text, as the
// reference's serializeComposerInput does for composers without an editor (spec §2.2):
// one slash_command node per complete "/name" token — at the start of the text or
// after whitespace, followed by whitespace or the end — with UTF-16 start and end, and
// "unknown": true when known says the entity has no such command. Without tokens the
// payload is {"source"} alone, with no nodes key. Protocol bridges (ACP, MCP) send what
// it returns.
func Serialize(source string, known func(name string) bool) []byte {
	var nodes []byte
	units := 0        // UTF-16 offset of the rune at i
	prevSpace := true // the start of the text counts as a token boundary
	for i := 0; i < len(source); {
		r, size := utf8.DecodeRuneInString(source[i:])
		if r == '/' && prevSpace {
			if name, ok := commandTokenAt(source, i+1); ok {
				var n rawjson.Object
				n.String("kind", NodeKindSlashCommand).Int("start", int64(units)).
					Int("end", int64(units+1+len(name))).String("raw", "/"+name).String("name", name)
				if known != nil && !known(name) {
					n.Bool("unknown", true)
				}
				if nodes == nil {
					nodes = append(nodes, '[')
				} else {
					nodes = append(nodes, ',')
				}
				nodes = append(nodes, n.Bytes()...)
				// The name is ASCII: one UTF-16 unit per byte. What follows is whitespace
				// or the end, so no token can start inside the name.
				i += 1 + len(name)
				units += 1 + len(name)
				prevSpace = false
				continue
			}
		}
		prevSpace = isJSSpace(r)
		units += utf16Units(r)
		i += size
	}
	var o rawjson.Object
	o.String("source", source)
	if nodes != nil {
		o.Raw("nodes", append(nodes, ']'))
	}
	return o.Bytes()
}

// commandTokenAt reads a command name starting at byte i and reports whether it is a
// complete token: a valid kebab name followed by whitespace or the end of the text.
func commandTokenAt(s string, i int) (string, bool) {
	j := i
	for j < len(s) && (s[j] >= 'a' && s[j] <= 'z' || s[j] >= '0' && s[j] <= '9' || s[j] == '-') {
		j++
	}
	name := s[i:j]
	if !ValidCommandName(name) {
		return "", false
	}
	if j < len(s) {
		r, _ := utf8.DecodeRuneInString(s[j:])
		if !isJSSpace(r) {
			return "", false
		}
	}
	return name, true
}

// isJSSpace is JavaScript's \s: the characters the reference's grammar treats as
// whitespace (Go's \s knows only the ASCII ones).
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0x00a0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

// utf16Units is how many UTF-16 code units r takes (an invalid byte decodes to U+FFFD,
// one unit, as JavaScript sees the replacement character).
func utf16Units(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}
