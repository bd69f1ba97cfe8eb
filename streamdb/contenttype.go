package streamdb

import (
	"bytes"
	"encoding/json"
	"errors"
	"mime"
	"strings"
)

// DefaultContentType is used when a stream is created without a Content-Type.
const DefaultContentType = "application/octet-stream"

// MediaType lowercases a Content-Type and drops its parameters ("; charset=utf-8"), which
// is how the protocol compares content types.
func MediaType(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt = contentType
		if i := strings.IndexByte(mt, ';'); i >= 0 {
			mt = mt[:i]
		}
	}
	return strings.ToLower(strings.TrimSpace(mt))
}

// SameContentType compares two Content-Type values the protocol's way.
func SameContentType(a, b string) bool { return MediaType(a) == MediaType(b) }

// IsJSON reports whether a stream of this content type is in JSON mode: appends are
// validated and flattened, reads return one JSON array.
func IsJSON(contentType string) bool { return MediaType(contentType) == "application/json" }

// IsText reports whether SSE may carry this content type as UTF-8 text (otherwise base64).
func IsText(contentType string) bool {
	mt := MediaType(contentType)
	return strings.HasPrefix(mt, "text/") || mt == "application/json"
}

var (
	// ErrInvalidJSON reports a JSON-mode body that does not parse.
	ErrInvalidJSON = errors.New("body is not valid JSON")
	// ErrEmptyJSONArray reports a JSON-mode append of [] (nothing to append).
	ErrEmptyJSONArray = errors.New("an empty JSON array appends nothing")
)

// SplitJSON turns a JSON-mode body into stored messages: a top-level array is flattened
// exactly one level, any other value is one message. Each message keeps its bytes as sent.
// An empty array yields no messages (valid on create, refused on append by the caller).
func SplitJSON(body []byte) ([][]byte, error) {
	trimmed := bytes.TrimSpace(body)
	if !json.Valid(trimmed) {
		return nil, ErrInvalidJSON
	}
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return [][]byte{trimmed}, nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(trimmed, &elems); err != nil {
		return nil, ErrInvalidJSON
	}
	out := make([][]byte, len(elems))
	for i, e := range elems {
		out[i] = e
	}
	return out, nil
}

// JoinJSON renders stored JSON messages as one JSON array.
func JoinJSON(msgs [][]byte) []byte {
	n := 2
	for _, m := range msgs {
		n += len(m) + 1
	}
	buf := make([]byte, 0, n)
	buf = append(buf, '[')
	for i, m := range msgs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, m...)
	}
	return append(buf, ']')
}
