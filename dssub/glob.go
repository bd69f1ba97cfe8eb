package dssub

import (
	"errors"
	"strings"

	"github.com/entityd/entityd/internal/textpolicy"
)

// Limits of patterns and paths.
const (
	maxPatternBytes    = 1024
	maxPatternSegments = 64
	maxPathBytes       = 1024
)

// glob is a compiled subscription pattern. Patterns and paths are sequences of segments
// separated by "/" (empty segments do not count): "*" matches exactly one segment, "**"
// any number of segments (none included), and any other segment matches itself ("%2A"
// in a segment stands for a literal "*").
type glob struct {
	segs []string // "*" and "**" are wildcards; literals are decoded
	wild []bool
}

var errBadPattern = errors.New("pattern must be 1-1024 bytes and at most 64 segments")

func compileGlob(pattern string) (*glob, error) {
	if len(pattern) == 0 || len(pattern) > maxPatternBytes {
		return nil, errBadPattern
	}
	segs := splitSegments(pattern)
	if len(segs) == 0 || len(segs) > maxPatternSegments {
		return nil, errBadPattern
	}
	g := &glob{segs: make([]string, len(segs)), wild: make([]bool, len(segs))}
	for i, s := range segs {
		switch s {
		case "*", "**":
			g.segs[i], g.wild[i] = s, true
		default:
			s = strings.ReplaceAll(s, "%2A", "*")
			g.segs[i] = strings.ReplaceAll(s, "%2a", "*")
		}
	}
	return g, nil
}

// match reports whether the path (already split into segments) matches.
func (g *glob) match(path []string) bool {
	p, s := 0, 0
	star, starS := -1, 0 // the last "**" seen and where its match started
	for s < len(path) {
		switch {
		case p < len(g.segs) && g.wild[p] && g.segs[p] == "**":
			star, starS = p, s
			p++
		case p < len(g.segs) && ((g.wild[p] && g.segs[p] == "*") || (!g.wild[p] && g.segs[p] == path[s])):
			p++
			s++
		case star >= 0:
			// let the last "**" swallow one more segment and retry from there
			starS++
			p, s = star+1, starS
		default:
			return false
		}
	}
	for p < len(g.segs) && g.wild[p] && g.segs[p] == "**" {
		p++
	}
	return p == len(g.segs)
}

// literalPrefix is the path prefix every match starts with: the leading literal segments.
func (g *glob) literalPrefix() string {
	var lits []string
	for i, s := range g.segs {
		if g.wild[i] {
			break
		}
		lits = append(lits, s)
	}
	return strings.Join(lits, "/")
}

// firstLiteral is the first segment when it is a literal ("" when it is a wildcard).
func (g *glob) firstLiteral() string {
	if g.wild[0] {
		return ""
	}
	return g.segs[0]
}

// splitSegments splits a path on "/" and drops empty segments.
func splitSegments(path string) []string {
	out := make([]string, 0, 4)
	for len(path) > 0 {
		i := strings.IndexByte(path, '/')
		if i < 0 {
			out = append(out, path)
			break
		}
		if i > 0 {
			out = append(out, path[:i])
		}
		path = path[i+1:]
	}
	return out
}

// normalizePath trims the slashes around a relative stream path.
func normalizePath(p string) string { return strings.Trim(p, "/") }

// reservedPath reports paths under the protocol's reserved control prefix.
func reservedPath(rel string) bool {
	rel = strings.TrimLeft(rel, "/")
	for _, p := range []string{"__ds", "_electric"} {
		if rel == p || strings.HasPrefix(rel, p+"/") {
			return true
		}
	}
	return false
}

// validStreamPath checks a relative stream path given by a client.
// It follows the stream path rule of the whole server (textpolicy.CheckPath): no empty,
// "." or ".." segments, no control characters, valid UTF-8.
func validStreamPath(p string) bool {
	if p == "" || len(p) > maxPathBytes || reservedPath(p) {
		return false
	}
	return textpolicy.CheckPath("/"+p, maxPathBytes+1) == ""
}
