package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/internal/validation"
)

// readBody reads a request body of at most limit bytes (413 beyond).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, newError(http.StatusRequestEntityTooLarge, CodePayloadTooLarge,
				fmt.Sprintf("Request body exceeds the limit of %d bytes", limit))
		}
		return nil, newError(http.StatusBadRequest, CodeInvalidRequest, "Could not read the request body")
	}
	return data, nil
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
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request) (*body, error) {
	data, err := readBody(w, r, s.cfg.MaxBodyBytes)
	if err != nil {
		return nil, err
	}
	return parseBody(data)
}

func parseBody(data []byte) (*body, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return &body{fields: map[string]json.RawMessage{}}, nil
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
	return newError(http.StatusBadRequest, CodeInvalidRequest, "Request body does not match API schema").withDetails(d)
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

// str returns a string member; ok is false when absent or (with a detail) not a string.
func (b *body) str(name string) (string, bool) {
	v, present := b.fields[name]
	if !present {
		return "", false
	}
	if kind(v) != 's' {
		b.details.Add("/"+name, "must be string")
		return "", false
	}
	var s string
	_ = json.Unmarshal(v, &s)
	return s, true
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

// stringMap returns an object member whose values must all be strings.
func (b *body) stringMap(name string) map[string]string {
	v := b.object(name)
	if v == nil {
		return nil
	}
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(v, &raw)
	out := make(map[string]string, len(raw))
	for k, rv := range raw {
		if kind(rv) != 's' {
			b.details.Add(validation.Pointer(name, k), "must be string")
			continue
		}
		var s string
		_ = json.Unmarshal(rv, &s)
		out[k] = s
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
