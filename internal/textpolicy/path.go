package textpolicy

import (
	"fmt"
	"strings"
)

// DefaultMaxPathBytes is the default limit on a stream path (Postgres cannot index a
// text value much beyond 2,700 bytes, and no real stream name comes near this).
const DefaultMaxPathBytes = 1024

// CheckPath returns why a decoded stream path ("/v1/stream/a/b", "/notebook/n1/main")
// is refused, or "": it must be at most max bytes, follow the Name rule, and consist of
// non-empty segments none of which is "." or ".." (so a path never means another one
// after normalisation by a proxy, a client library or a browser).
func CheckPath(path string, max int) string {
	if max > 0 && len(path) > max {
		return fmt.Sprintf("must be at most %d bytes", max)
	}
	if p := Check(path, Name); p != "" {
		return p
	}
	rest, ok := strings.CutPrefix(path, "/")
	if !ok {
		return "must start with /"
	}
	for seg := range strings.SplitSeq(rest, "/") {
		switch seg {
		case "":
			return "must not contain empty segments (// or a trailing /)"
		case ".", "..":
			return "must not contain . or .. segments"
		}
	}
	return ""
}

// HasEncodedSlash reports whether an escaped URL path encodes a '/' (%2F): such a path
// names a different resource to a proxy than to us, so it is refused.
func HasEncodedSlash(escaped string) bool {
	for i := 0; i+2 < len(escaped); i++ {
		if escaped[i] == '%' && escaped[i+1] == '2' && (escaped[i+2] == 'F' || escaped[i+2] == 'f') {
			return true
		}
	}
	return false
}
