// Package textpolicy is entityd's one rule for the text it is sent, applied at the door
// of every endpoint, so that whatever is accepted can be stored and delivered everywhere
// it flows (Postgres text and jsonb columns refuse NUL and invalid UTF-8; JSON readers
// choke on invalid UTF-8; Go's JSON decoder silently turns lone surrogates into U+FFFD).
//
// Two kinds of strings are identifiers, refused with a 4xx when they break the rule:
//
//   - Name: names, keys, ids, owners, tag keys, message types, positions, paths, header
//     values that are stored. Valid UTF-8, no control characters (U+0000–U+001F,
//     U+007F–U+009F), no lone surrogate escapes.
//   - Text: human-readable labels (descriptions, tag values, signal reasons). As Name,
//     but tab, line feed and carriage return are allowed.
//
// Content (message payloads, composer text, spawn args, stream bodies) is not checked
// here beyond being valid UTF-8 when it is JSON: it is stored byte for byte, escapes and
// all, in columns that keep it (bytea, json), and delivered as sent.
package textpolicy

import (
	"unicode/utf8"
)

// Kind is the class of an identifier-like string.
type Kind uint8

const (
	// Name is an identifier: no control characters at all.
	Name Kind = iota
	// Text is a human-readable label: tab, line feed and carriage return are allowed.
	Text
)

// Problems, as the detail messages of a refused request.
const (
	ProblemUTF8      = "must be valid UTF-8"
	ProblemNUL       = "must not contain U+0000"
	ProblemControl   = "must not contain control characters"
	ProblemSurrogate = "must not contain a lone UTF-16 surrogate"
)

// Check returns why s breaks the rule for k, or "" when it does not.
func Check(s string, k Kind) string {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			if p := control(rune(c), k); p != "" {
				return p
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return ProblemUTF8
		}
		if p := control(r, k); p != "" {
			return p
		}
		i += size
	}
	return ""
}

// Valid reports whether s follows the rule for k.
func Valid(s string, k Kind) bool { return Check(s, k) == "" }

func control(r rune, k Kind) string {
	switch {
	case r == 0:
		return ProblemNUL
	case r < 0x20:
		if k == Text && (r == '\t' || r == '\n' || r == '\r') {
			return ""
		}
		return ProblemControl
	case r >= 0x7f && r <= 0x9f:
		return ProblemControl
	}
	return ""
}

// Sanitize makes s storable in any text column and readable anywhere: invalid UTF-8 and
// NUL become U+FFFD, and s is cut (on a rune boundary) to at most max bytes when max > 0.
// It is for text entityd writes itself from untrusted sources (error messages of
// handlers and of the database), never for what a client asked to store.
func Sanitize(s string, max int) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if s[i] == 0 || s[i] >= utf8.RuneSelf {
			clean = false
			break
		}
	}
	if !clean {
		out := make([]rune, 0, len(s))
		for _, r := range s { // invalid bytes range as U+FFFD
			if r == 0 {
				r = utf8.RuneError
			}
			out = append(out, r)
		}
		s = string(out)
	}
	if max > 0 && len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}
