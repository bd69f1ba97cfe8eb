package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"unicode/utf8"

	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/internal/textpolicy"
	"github.com/entityd/entityd/internal/validation"
)

// readBody reads a request body of at most limit bytes (413 beyond).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		return nil, bodyReadError(w, err, limit)
	}
	return data, nil
}

// bodyReadError answers a body that could not be read: too large (413), too slow (408,
// and the connection closed), or cut off (400).
func bodyReadError(w http.ResponseWriter, err error, limit int64) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return bodyTooLarge(limit)
	}
	if errBodyTimeout(err) {
		w.Header().Set("Connection", "close")
		return newError(http.StatusRequestTimeout, CodeRequestTimeout, "The request body did not arrive in time")
	}
	return newError(http.StatusBadRequest, CodeInvalidRequest, "Could not read the request body")
}

// body is a decoded JSON object request body. Its accessors check member types the way
// the reference's route schemas do and collect {path,message} details; fail() turns them
// into the 400 "Request body does not match API schema".
type body struct {
	fields  map[string]json.RawMessage
	order   []string
	details validation.Details
}

// readJSON reads a JSON object body. An empty body counts as {} (as in the reference).
//
// The body is read and parsed under a reservation of its size (bytes in flight, see
// budget): a client that announces a large body and trickles it holds its share, not the
// server's memory.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request) (*body, error) {
	var h hold
	defer h.release()
	data, err := s.readBodyReserved(w, r, keyFor(r, ""), s.cfg.MaxBodyBytes, 1, &h)
	if err != nil {
		return nil, err
	}
	if err := httpx.RequireJSON(r, data); err != nil {
		return nil, err
	}
	return parseBody(data)
}

func parseBody(data []byte) (*body, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return &body{fields: map[string]json.RawMessage{}}, nil
	}
	if !utf8.Valid(data) {
		// JSON is UTF-8 (RFC 8259): what is stored is served back as application/json.
		return nil, newError(http.StatusBadRequest, CodeInvalidRequest, "Request body must be valid UTF-8")
	}
	if !json.Valid(data) {
		return nil, newError(http.StatusBadRequest, CodeInvalidRequest, "Invalid JSON body")
	}
	b := &body{fields: map[string]json.RawMessage{}}
	if data[0] != '{' {
		return nil, schemaMismatch(validation.Details{{Path: "/", Message: "must be object"}})
	}
	members, err := rawjson.SplitObject(data)
	if err != nil {
		return nil, newError(http.StatusBadRequest, CodeInvalidRequest, "Invalid JSON body")
	}
	for _, m := range members {
		if _, dup := b.fields[m.Key]; !dup {
			b.order = append(b.order, m.Key)
		}
		b.fields[m.Key] = m.Value // like JSON.parse, the last duplicate wins
	}
	return b, nil
}

func schemaMismatch(d validation.Details) *Error {
	return newError(http.StatusBadRequest, CodeInvalidRequest, "Request body does not match API schema").WithDetails(d)
}

func (b *body) has(name string) bool {
	v, ok := b.fields[name]
	return ok && v != nil
}

// raw returns a member as sent (nil when absent).
func (b *body) raw(name string) json.RawMessage { return b.fields[name] }

func kind(v json.RawMessage) byte {
	if len(v) == 0 {
		return 0
	}
	switch v[0] {
	case '"':
		return 's'
	case '{':
		return 'o'
	case '[':
		return 'a'
	case 't', 'f':
		return 'b'
	case 'n':
		return 'n'
	default:
		return '#'
	}
}

// str returns a string member that is an identifier (textpolicy.Name: no control
// characters, no lone surrogates); ok is false when absent or (with a detail) not such a
// string.
func (b *body) str(name string) (string, bool) { return b.stringOf(name, textpolicy.Name) }

// text returns a string member that is human-readable text (textpolicy.Text: tab and
// line breaks allowed).
func (b *body) text(name string) (string, bool) { return b.stringOf(name, textpolicy.Text) }

func (b *body) stringOf(name string, k textpolicy.Kind) (string, bool) {
	v, present := b.fields[name]
	if !present {
		return "", false
	}
	if kind(v) != 's' {
		b.details.Add("/"+name, "must be string")
		return "", false
	}
	s, problem := textpolicy.CheckString(v, k)
	if problem != "" {
		b.details.Add(validation.Pointer(name), problem)
		return "", false
	}
	return s, true
}

// maxLen adds a detail when a string member is longer than max bytes.
func (b *body) maxLen(name, value string, max int) {
	if len(value) > max {
		b.details.Add(validation.Pointer(name), fmt.Sprintf("must be at most %d bytes", max))
	}
}

// object returns an object member (nil when absent; a detail when not an object).
func (b *body) object(name string) json.RawMessage {
	v, present := b.fields[name]
	if !present {
		return nil
	}
	if kind(v) != 'o' {
		b.details.Add("/"+name, "must be object")
		return nil
	}
	return v
}

// number returns a numeric member.
func (b *body) number(name string) (float64, bool) {
	v, present := b.fields[name]
	if !present {
		return 0, false
	}
	if kind(v) != '#' {
		b.details.Add("/"+name, "must be number")
		return 0, false
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil {
		b.details.Add("/"+name, "must be a finite number") // 1e999 and the like
		return 0, false
	}
	return f, true
}

// enum returns a string member that must be one of allowed.
func (b *body) enum(name string, allowed ...string) (string, bool) {
	s, ok := b.str(name)
	if !ok {
		return "", false
	}
	for _, a := range allowed {
		if s == a {
			return s, true
		}
	}
	b.details.Add("/"+name, "must be equal to one of the allowed values")
	return "", false
}

// only reports members outside known (a route schema with additionalProperties false).
func (b *body) only(known ...string) {
	set := map[string]bool{}
	for _, k := range known {
		set[k] = true
	}
	for _, k := range b.order {
		if !set[k] {
			b.details.Add(validation.Pointer(k), "must NOT have additional properties")
		}
	}
}

// stringMap returns an object member whose values must all be strings: keys are
// identifiers of at most maxKey bytes, values text of at most maxValue bytes.
func (b *body) stringMap(name string, maxKey, maxValue int) map[string]string {
	v := b.object(name)
	if v == nil {
		return nil
	}
	// Keys are checked as Name and string values as Text, strictly decoded.
	if d := textpolicy.CheckJSON(v, validation.Pointer(name), textpolicy.Text); len(d) > 0 {
		b.details = append(b.details, d...)
		return nil
	}
	members, err := rawjson.SplitObject(v)
	if err != nil {
		b.details.Add("/"+name, "must be object")
		return nil
	}
	out := make(map[string]string, len(members))
	for _, m := range members {
		path := validation.Pointer(name, m.Key)
		switch {
		case len(m.Key) == 0 || len(m.Key) > maxKey:
			b.details.Add(path, fmt.Sprintf("property name must be 1-%d bytes", maxKey))
			continue
		case kind(m.Value) != 's':
			b.details.Add(path, "must be string")
			continue
		}
		s, _ := textpolicy.CheckString(m.Value, textpolicy.Text)
		if len(s) > maxValue {
			b.details.Add(path, fmt.Sprintf("must be at most %d bytes", maxValue))
			continue
		}
		out[m.Key] = s // like JSON.parse, the last duplicate wins
	}
	return out
}

// fail returns the 400 for collected details, or nil.
func (b *body) fail() error {
	if len(b.details) == 0 {
		return nil
	}
	return schemaMismatch(b.details)
}
