// Package validation holds the shape every validator in entityd reports problems in:
// a list of {path, message} pairs, where path is a JSON-pointer-like location in the
// request ("/" for the root, "/nodes/3/name" for a field). The HTTP layer copies these
// verbatim into the "details" of an error response, so validators in different packages
// (composer_input, JSON Schema, slash-command definitions) all speak the same language.
package validation

import (
	"strconv"
	"strings"
)

// Detail is one validation problem.
type Detail struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// Details is an ordered list of problems; order is part of the contract because it
// mirrors the reference implementation's output.
type Details []Detail

// Add appends a problem at path.
func (d *Details) Add(path, message string) {
	*d = append(*d, Detail{Path: path, Message: message})
}

// Pointer joins path segments into a JSON pointer, escaping "~" and "/" as RFC 6901 says.
// Pointer() is "/", Pointer("nodes", 3, "name") is "/nodes/3/name".
func Pointer(segments ...any) string {
	if len(segments) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, s := range segments {
		b.WriteByte('/')
		switch v := s.(type) {
		case string:
			b.WriteString(escapeToken(v))
		case int:
			b.WriteString(strconv.Itoa(v))
		default:
			panic("validation.Pointer: segment must be string or int")
		}
	}
	return b.String()
}

// Join appends segments to an existing pointer ("/" counts as the empty root).
func Join(base string, segments ...any) string {
	if base == "/" {
		base = ""
	}
	if len(segments) == 0 {
		if base == "" {
			return "/"
		}
		return base
	}
	return base + Pointer(segments...)
}

func escapeToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	s = strings.ReplaceAll(s, "~", "~0")
	return strings.ReplaceAll(s, "/", "~1")
}

// One is the details of a single problem.
func One(path, message string) Details { return Details{{Path: path, Message: message}} }
