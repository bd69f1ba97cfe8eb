package textpolicy

import (
	"encoding/json"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/internal/validation"
)

// maxDetails bounds the details one CheckJSON reports (a hostile body could otherwise
// make the error response as large as the request).
const maxDetails = 20

// DecodeString decodes a raw JSON string token (quotes included) that json.Valid
// accepted. Unlike encoding/json it does not hide what the sender wrote: it reports a
// lone surrogate escape (\ud800 alone) and invalid UTF-8 instead of replacing them with
// U+FFFD. The string returned is then checked with Check.
func DecodeString(raw []byte) (string, string) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", ProblemUTF8
	}
	body := raw[1 : len(raw)-1]
	plain := true
	for _, c := range body {
		if c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return string(body), ""
	}
	if !utf8.Valid(body) {
		return "", ProblemUTF8
	}
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); {
		c := body[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(body) {
			return "", ProblemUTF8
		}
		switch body[i+1] {
		case '"', '\\', '/':
			out = append(out, body[i+1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(body, i+2)
			if !ok {
				return "", ProblemUTF8
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if r >= 0xdc00 {
					return "", ProblemSurrogate
				}
				lo, ok := rune(0), false
				if i+6 <= len(body) && body[i] == '\\' && body[i+1] == 'u' {
					lo, ok = hex4(body, i+2)
				}
				if !ok || lo < 0xdc00 || lo > 0xdfff {
					return "", ProblemSurrogate
				}
				r = utf16.DecodeRune(r, lo)
				i += 6
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return "", ProblemUTF8
		}
		i += 2
	}
	return string(out), ""
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[at:at+4]), 16, 32)
	return rune(n), err == nil
}

// CheckString decodes a raw JSON string token and checks it for k; it returns the
// string, or "" and the problem.
func CheckString(raw []byte, k Kind) (string, string) {
	s, p := DecodeString(raw)
	if p != "" {
		return "", p
	}
	if p := Check(s, k); p != "" {
		return "", p
	}
	return s, ""
}

// CheckJSON checks every string of a JSON value that json.Valid accepted — member names
// and string values at any depth — for k, and reports each one that breaks the rule as a
// detail at its JSON pointer under base (at most 20 details).
func CheckJSON(raw []byte, base string, k Kind) validation.Details {
	w := walker{data: raw, kind: k}
	w.value(rawjson.SkipSpace(raw, 0), base)
	return w.details
}

// CheckKeys checks only the member names of a JSON object (not its values, which may be
// content such as JSON Schemas) as Name, with the same details as CheckJSON.
func CheckKeys(raw []byte, base string) validation.Details {
	w := walker{data: raw, kind: Name, keysOnly: true}
	w.value(rawjson.SkipSpace(raw, 0), base)
	return w.details
}

type walker struct {
	data     []byte
	kind     Kind
	keysOnly bool // check the top-level member names and nothing else
	depth    int
	details  validation.Details
}

// value checks the value starting at i and returns the index after it. The input is
// valid JSON, so the walk only needs to find boundaries (and json.Valid caps nesting).
func (w *walker) value(i int, path string) int {
	if i >= len(w.data) {
		return i
	}
	switch w.data[i] {
	case '"':
		end := rawjson.SkipString(w.data, i)
		if w.keysOnly {
			return end
		}
		if _, p := CheckString(w.data[i:end], w.kind); p != "" {
			w.add(path, p)
		}
		return end
	case '{':
		w.depth++
		defer func() { w.depth-- }()
		i = rawjson.SkipSpace(w.data, i+1)
		for i < len(w.data) && w.data[i] != '}' {
			keyEnd := rawjson.SkipString(w.data, i)
			key, p := DecodeString(w.data[i:keyEnd])
			if p == "" {
				p = Check(key, Name)
			} else {
				_ = json.Unmarshal(w.data[i:keyEnd], &key) // for the path only: U+FFFD where it breaks
			}
			key = Sanitize(key, 256)
			if w.keysOnly && w.depth > 1 {
				p = ""
			}
			if p != "" {
				w.add(validation.Join(path, key), "property name "+p)
			}
			i = rawjson.SkipSpace(w.data, keyEnd)
			i = rawjson.SkipSpace(w.data, i+1) // ':'
			i = rawjson.SkipSpace(w.data, w.value(i, validation.Join(path, key)))
			if i < len(w.data) && w.data[i] == ',' {
				i = rawjson.SkipSpace(w.data, i+1)
			}
		}
		return i + 1
	case '[':
		w.depth++
		defer func() { w.depth-- }()
		i = rawjson.SkipSpace(w.data, i+1)
		for n := 0; i < len(w.data) && w.data[i] != ']'; n++ {
			i = rawjson.SkipSpace(w.data, w.value(i, validation.Join(path, n)))
			if i < len(w.data) && w.data[i] == ',' {
				i = rawjson.SkipSpace(w.data, i+1)
			}
		}
		return i + 1
	}
	for i < len(w.data) { // number, true, false, null
		switch w.data[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

func (w *walker) add(path, problem string) {
	if len(w.details) < maxDetails {
		w.details.Add(path, problem)
	}
}
