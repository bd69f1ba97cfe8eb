// Package rawjson builds JSON objects that embed caller-supplied JSON verbatim.
// encoding/json re-compacts and HTML-escapes json.RawMessage values, which would break
// entityd's promise to store payloads byte for byte as sent; this builder copies them.
package rawjson

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// Object accumulates one JSON object. The zero value is ready to use.
type Object struct {
	buf []byte
}

// Grow makes room for n more bytes, so that an object whose size is known roughly
// (one embedding a payload) is built in one allocation instead of several.
func (o *Object) Grow(n int) *Object {
	o.buf = slices.Grow(o.buf, n)
	return o
}

func (o *Object) key(k string) {
	if len(o.buf) == 0 {
		o.buf = append(o.buf, '{')
	} else {
		o.buf = append(o.buf, ',')
	}
	o.buf = AppendString(o.buf, k)
	o.buf = append(o.buf, ':')
}

// Raw adds a member whose value is already-valid JSON, copied as is.
func (o *Object) Raw(k string, v []byte) *Object {
	o.key(k)
	o.buf = append(o.buf, v...)
	return o
}

// String adds a string member.
func (o *Object) String(k, v string) *Object {
	o.key(k)
	o.buf = AppendString(o.buf, v)
	return o
}

// Int adds an integer member.
func (o *Object) Int(k string, v int64) *Object {
	o.key(k)
	o.buf = strconv.AppendInt(o.buf, v, 10)
	return o
}

// Bool adds a boolean member.
func (o *Object) Bool(k string, v bool) *Object {
	o.key(k)
	o.buf = strconv.AppendBool(o.buf, v)
	return o
}

// Null adds a null member.
func (o *Object) Null(k string) *Object {
	o.key(k)
	o.buf = append(o.buf, "null"...)
	return o
}

// Time adds a timestamp as an RFC 3339 string with milliseconds, like JavaScript's
// Date.toISOString.
func (o *Object) Time(k string, t time.Time) *Object {
	return o.String(k, ISOTime(t))
}

// Value adds a member marshalled with encoding/json (for values we built ourselves).
func (o *Object) Value(k string, v any) *Object {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte("null")
	}
	return o.Raw(k, b)
}

// Bytes returns the finished object.
func (o *Object) Bytes() []byte {
	if len(o.buf) == 0 {
		return []byte("{}")
	}
	return append(o.buf, '}')
}

// ISOTime formats t like JavaScript's Date.prototype.toISOString (UTC, milliseconds).
func ISOTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// AppendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// encoding/json does; unlike encoding/json, <, > and & are not escaped.
func AppendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
