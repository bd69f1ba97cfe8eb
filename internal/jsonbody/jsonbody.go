// Package jsonbody decodes a JSON object request body and checks its members the way
// the reference's route schemas do, collecting {path, message} details that Fail turns
// into the 400 "Request body does not match API schema". Both HTTP rooms (the Durable
// Streams routes and Electric's entity API) read their control bodies with it.
package jsonbody

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/internal/textpolicy"
	"github.com/entityd/entityd/internal/validation"
)

// Body is a decoded JSON object request body. Its accessors check member types the way
// the reference's route schemas do and collect {path,message} details; Fail turns them
// into the 400 "Request body does not match API schema".
type Body struct {
	fields  map[string]json.RawMessage
	order   []string
	Details validation.Details
}

// Parse decodes data as a JSON object body; an empty body counts as {} (as in the
// reference).
func Parse(data []byte) (*Body, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return &Body{fields: map[string]json.RawMessage{}}, nil
	}
	if !utf8.Valid(data) {
		// JSON is UTF-8 (RFC 8259): what is stored is served back as application/json.
		return nil, httpx.New(http.StatusBadRequest, httpx.CodeInvalidRequest, "Request body must be valid UTF-8")
	}
	if !json.Valid(data) {
		return nil, httpx.New(http.StatusBadRequest, httpx.CodeInvalidRequest, "Invalid JSON body")
	}
	b := &Body{fields: map[string]json.RawMessage{}}
	if data[0] != '{' {
		return nil, SchemaMismatch(validation.Details{{Path: "/", Message: "must be object"}})
	}
	members, err := rawjson.SplitObject(data)
	if err != nil {
		return nil, httpx.New(http.StatusBadRequest, httpx.CodeInvalidRequest, "Invalid JSON body")
	}
	for _, m := range members {
		if _, dup := b.fields[m.Key]; !dup {
			b.order = append(b.order, m.Key)
		}
		b.fields[m.Key] = m.Value // like JSON.parse, the last duplicate wins
	}
	return b, nil
}

// SchemaMismatch is the 400 for details against a route schema.
func SchemaMismatch(d validation.Details) *httpx.Error {
	return httpx.New(http.StatusBadRequest, httpx.CodeInvalidRequest, "Request body does not match API schema").WithDetails(d)
}

func (b *Body) Has(name string) bool {
	v, ok := b.fields[name]
	return ok && v != nil
}

// Raw returns a member as sent (nil when absent).
func (b *Body) Raw(name string) json.RawMessage { return b.fields[name] }

// Kind is a JSON value's kind: s(tring), o(bject), a(rray), b(oolean), n(ull), #
// (number), 0 when empty.
func Kind(v json.RawMessage) byte {
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

// Str returns a string member that is an identifier (textpolicy.Name: no control
// characters, no lone surrogates); ok is false when absent or (with a detail) not such a
// string.
func (b *Body) Str(name string) (string, bool) { return b.stringOf(name, textpolicy.Name) }

// Text returns a string member that is human-readable text (textpolicy.Text: tab and
// line breaks allowed).
func (b *Body) Text(name string) (string, bool) { return b.stringOf(name, textpolicy.Text) }

func (b *Body) stringOf(name string, k textpolicy.Kind) (string, bool) {
	v, present := b.fields[name]
	if !present {
		return "", false
	}
	if Kind(v) != 's' {
		b.Details.Add("/"+name, "must be string")
		return "", false
	}
	s, problem := textpolicy.CheckString(v, k)
	if problem != "" {
		b.Details.Add(validation.Pointer(name), problem)
		return "", false
	}
	return s, true
}

// MaxLen adds a detail when a string member is longer than max bytes.
func (b *Body) MaxLen(name, value string, max int) {
	if len(value) > max {
		b.Details.Add(validation.Pointer(name), fmt.Sprintf("must be at most %d bytes", max))
	}
}

// Object returns an object member (nil when absent; a detail when not an object).
func (b *Body) Object(name string) json.RawMessage {
	v, present := b.fields[name]
	if !present {
		return nil
	}
	if Kind(v) != 'o' {
		b.Details.Add("/"+name, "must be object")
		return nil
	}
	return v
}

// Number returns a numeric member.
func (b *Body) Number(name string) (float64, bool) {
	v, present := b.fields[name]
	if !present {
		return 0, false
	}
	if Kind(v) != '#' {
		b.Details.Add("/"+name, "must be number")
		return 0, false
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil {
		b.Details.Add("/"+name, "must be a finite number") // 1e999 and the like
		return 0, false
	}
	return f, true
}

// Enum returns a string member that must be one of allowed.
func (b *Body) Enum(name string, allowed ...string) (string, bool) {
	s, ok := b.Str(name)
	if !ok {
		return "", false
	}
	for _, a := range allowed {
		if s == a {
			return s, true
		}
	}
	b.Details.Add("/"+name, "must be equal to one of the allowed values")
	return "", false
}

// Only reports members outside known (a route schema with additionalProperties false).
func (b *Body) Only(known ...string) {
	set := map[string]bool{}
	for _, k := range known {
		set[k] = true
	}
	for _, k := range b.order {
		if !set[k] {
			b.Details.Add(validation.Pointer(k), "must NOT have additional properties")
		}
	}
}

// StringMap returns an object member whose values must all be strings: keys are
// identifiers of at most maxKey bytes, values text of at most maxValue bytes.
func (b *Body) StringMap(name string, maxKey, maxValue int) map[string]string {
	v := b.Object(name)
	if v == nil {
		return nil
	}
	// Keys are checked as Name and string values as Text, strictly decoded.
	if d := textpolicy.CheckJSON(v, validation.Pointer(name), textpolicy.Text); len(d) > 0 {
		b.Details = append(b.Details, d...)
		return nil
	}
	members, err := rawjson.SplitObject(v)
	if err != nil {
		b.Details.Add("/"+name, "must be object")
		return nil
	}
	out := make(map[string]string, len(members))
	for _, m := range members {
		path := validation.Pointer(name, m.Key)
		switch {
		case len(m.Key) == 0 || len(m.Key) > maxKey:
			b.Details.Add(path, fmt.Sprintf("property name must be 1-%d bytes", maxKey))
			continue
		case Kind(m.Value) != 's':
			b.Details.Add(path, "must be string")
			continue
		}
		s, _ := textpolicy.CheckString(m.Value, textpolicy.Text)
		if len(s) > maxValue {
			b.Details.Add(path, fmt.Sprintf("must be at most %d bytes", maxValue))
			continue
		}
		out[m.Key] = s // like JSON.parse, the last duplicate wins
	}
	return out
}

// Fail returns the 400 for collected details, or nil.
func (b *Body) Fail() error {
	if len(b.Details) == 0 {
		return nil
	}
	return SchemaMismatch(b.Details)
}

// Present reports whether the body has the member, null included (Has is false for a
// null).
func (b *Body) Present(name string) bool {
	_, ok := b.fields[name]
	return ok
}

// Set sets a member to v (a serve endpoint's manifest gets the endpoint it came from).
func (b *Body) Set(name string, v json.RawMessage) {
	if _, ok := b.fields[name]; !ok {
		b.order = append(b.order, name)
	}
	b.fields[name] = v
}
