package rawjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// ErrNotObject reports that SplitObject was given something other than a JSON object.
var ErrNotObject = errors.New("rawjson: not a JSON object")

// Member is one member of a JSON object: its key and its value's raw bytes.
type Member struct {
	Key   string
	Value []byte
}

// SplitObject returns the members of a JSON object in document order, each value as the
// raw bytes it was sent as. data must be valid JSON (check with json.Valid first): the
// scanner only finds boundaries, which is several times cheaper than decoding.
func SplitObject(data []byte) ([]Member, error) {
	i := SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, ErrNotObject
	}
	i++
	var out []Member
	for {
		i = SkipSpace(data, i)
		if i >= len(data) {
			return nil, ErrNotObject
		}
		if data[i] == '}' {
			return out, nil
		}
		if data[i] == ',' {
			i++
			continue
		}
		keyEnd := SkipString(data, i)
		key, err := stringValue(data[i:keyEnd])
		if err != nil {
			return nil, err
		}
		i = SkipSpace(data, keyEnd)
		if i >= len(data) || data[i] != ':' {
			return nil, ErrNotObject
		}
		i = SkipSpace(data, i+1)
		end := skipValue(data, i)
		out = append(out, Member{Key: key, Value: data[i:end]})
		i = end
	}
}

// SkipSpace returns the index of the first byte at or after i that is not JSON
// whitespace.
func SkipSpace(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r') {
		i++
	}
	return i
}

// SkipString returns the index after the string starting at d[i] (a quote), or len(d)
// when it is not terminated.
func SkipString(d []byte, i int) int {
	for i++; i < len(d); i++ {
		switch d[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(d)
}

// skipValue returns the index after the value starting at d[i].
func skipValue(d []byte, i int) int {
	if i >= len(d) {
		return i
	}
	switch d[i] {
	case '"':
		return SkipString(d, i)
	case '{', '[':
		depth := 0
		for ; i < len(d); i++ {
			switch d[i] {
			case '"':
				i = SkipString(d, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(d)
	default: // number, true, false, null
		for i < len(d) && d[i] != ',' && d[i] != '}' && d[i] != ']' && d[i] != ' ' && d[i] != '\t' && d[i] != '\n' && d[i] != '\r' {
			i++
		}
		return i
	}
}

// stringValue decodes a JSON string token; tokens without escapes need no decoder.
func stringValue(tok []byte) (string, error) {
	if len(tok) < 2 || tok[0] != '"' || tok[len(tok)-1] != '"' {
		return "", ErrNotObject
	}
	inner := tok[1 : len(tok)-1]
	plain, ascii := true, true
	for _, c := range inner {
		if c == '\\' {
			plain = false
			break
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	if plain && (ascii || utf8.Valid(inner)) {
		return string(inner), nil
	}
	var s string // escapes, or invalid UTF-8 (which decodes to U+FFFD)
	err := json.Unmarshal(tok, &s)
	return s, err
}

// Ordered decodes a JSON object into its members by key and the keys in document order
// (a repeated key keeps its first position and its last value, as JSON.parse does).
// Unlike SplitObject it validates data first.
func Ordered(data []byte) (keys []string, values map[string][]byte, err error) {
	if !json.Valid(data) {
		return nil, nil, ErrNotObject
	}
	members, err := SplitObject(data)
	if err != nil {
		return nil, nil, err
	}
	values = make(map[string][]byte, len(members))
	for _, m := range members {
		if _, dup := values[m.Key]; !dup {
			keys = append(keys, m.Key)
		}
		values[m.Key] = m.Value
	}
	return keys, values, nil
}

// Span is one member of a JSON object by position: data[KeyStart:KeyEnd] is its key (the
// string token, quotes included), data[ValueStart:ValueEnd] its value.
type Span struct {
	KeyStart, KeyEnd, ValueStart, ValueEnd int
}

// KeyIs reports whether the key of member sp of data is key, without allocating unless
// the key is written with escapes.
func KeyIs(data []byte, sp Span, key string) bool {
	tok := data[sp.KeyStart:sp.KeyEnd]
	if len(tok) < 2 {
		return false
	}
	inner := tok[1 : len(tok)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner) == key
	}
	k, err := stringValue(tok)
	return err == nil && k == key
}

// ObjectSpans is SplitObject by position, for callers that look for a few members or
// rewrite one in place; close is the index of the object's closing brace. spans is
// appended to (pass a reused buffer to spare allocations). data must be valid JSON.
func ObjectSpans(data []byte, spans []Span) (_ []Span, close int, err error) {
	i := SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, 0, ErrNotObject
	}
	i++
	for {
		i = SkipSpace(data, i)
		if i >= len(data) {
			return nil, 0, ErrNotObject
		}
		if data[i] == '}' {
			return spans, i, nil
		}
		if data[i] == ',' {
			i++
			continue
		}
		if data[i] != '"' {
			return nil, 0, ErrNotObject
		}
		keyStart := i
		keyEnd := SkipString(data, i)
		i = SkipSpace(data, keyEnd)
		if i >= len(data) || data[i] != ':' {
			return nil, 0, ErrNotObject
		}
		i = SkipSpace(data, i+1)
		end := skipValue(data, i)
		spans = append(spans, Span{KeyStart: keyStart, KeyEnd: keyEnd, ValueStart: i, ValueEnd: end})
		i = end
	}
}
