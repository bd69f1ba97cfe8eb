package attachment

import (
	"strings"
)

// Segment is the path segment between an entity's URL and an attachment id.
const Segment = "/attachments/"

// StreamPath is the stream that holds the bytes of attachment id of the entity at url.
func StreamPath(entityURL, id string) string { return entityURL + Segment + id }

// IsStreamPath reports whether path has the shape of an attachment's stream,
// "/<type>/<id>/attachments/<attachment id>": the server creates streams there (an
// upload), never a client.
func IsStreamPath(path string) bool {
	rest, ok := strings.CutPrefix(path, "/")
	if !ok {
		return false
	}
	parts := strings.Split(rest, "/")
	return len(parts) == 4 && parts[0] != "" && parts[1] != "" && parts[2] == "attachments" && parts[3] != ""
}

// MaxIDBytes bounds an attachment id (it is a path segment of its stream).
const MaxIDBytes = 128

// ValidID reports whether id may name an attachment: 1-128 bytes of letters, digits and
// "._:-", not starting with "." (the reference refuses "", "/" and a leading "."; the
// narrower alphabet keeps the id a plain path segment in every client's URL).
func ValidID(id string) bool {
	if id == "" || len(id) > MaxIDBytes || id[0] == '.' {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}
