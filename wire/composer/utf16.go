package composer

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
)

// composer_input offsets are JavaScript string indices, i.e. UTF-16 code units, and the
// reference compares raw against source.slice(start, end) on those units. Go strings
// cannot hold a lone surrogate and encoding/json turns one into U+FFFD, which would make
// a span that splits a surrogate pair fail here while it passes in JS. So string tokens
// are decoded straight from their JSON text into UTF-16 units, escapes kept as sent.

// unitReader yields, one by one, the UTF-16 code units of the content of a JSON string
// token (the bytes between the quotes). It walks the token itself instead of building a
// []uint16 so that length checks and comparisons on the hot path allocate nothing.
// The content must come from a token the scanner accepted (escapes are well formed).
type unitReader struct {
	s   []byte
	i   int
	low uint16 // second half of a pair still to be returned; 0 means none (0 is never a surrogate)
}

func (r *unitReader) next() (uint16, bool) {
	if r.low != 0 {
		u := r.low
		r.low = 0
		return u, true
	}
	if r.i >= len(r.s) {
		return 0, false
	}
	c := r.s[r.i]
	if c == '\\' && r.i+1 < len(r.s) {
		e := r.s[r.i+1]
		r.i += 2
		switch e {
		case 'b':
			return '\b', true
		case 'f':
			return '\f', true
		case 'n':
			return '\n', true
		case 'r':
			return '\r', true
		case 't':
			return '\t', true
		case 'u':
			// Kept as one unit whatever it is: a lone \ud83d stays 0xD83D, exactly like
			// JSON.parse, and an escaped pair comes out as its two halves.
			var u uint16
			for k := 0; k < 4 && r.i < len(r.s); k++ {
				u = u<<4 | uint16(hexVal(r.s[r.i]))
				r.i++
			}
			return u, true
		default: // '"', '\\', '/'
			return uint16(e), true
		}
	}
	if c < utf8.RuneSelf {
		r.i++
		return uint16(c), true
	}
	ru, size := utf8.DecodeRune(r.s[r.i:])
	if ru == utf8.RuneError && size <= 1 {
		// Match what a JS client sees when it decodes the body (WHATWG UTF-8 decoder, as
		// used by TextDecoder and Node's Buffer): one U+FFFD per maximal subpart, not per byte.
		r.i += maximalSubpart(r.s[r.i:])
		return utf8.RuneError, true
	}
	r.i += size
	if ru >= 0x10000 {
		hi, lo := utf16.EncodeRune(ru)
		r.low = uint16(lo)
		return uint16(hi), true
	}
	return uint16(ru), true
}

func hexVal(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10
	}
	return 0
}

// maximalSubpart returns how many bytes at the start of b (which does not begin with a
// valid UTF-8 sequence) one U+FFFD replaces under the WHATWG decoder: the lead byte plus
// the continuation bytes that could still have completed it, at least 1.
func maximalSubpart(b []byte) int {
	lo, hi := byte(0x80), byte(0xBF)
	need := 0
	switch c := b[0]; {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c == 0xED:
		need, hi = 2, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		need = 2
	case c == 0xF0:
		need, lo = 3, 0x90
	case c == 0xF4:
		need, hi = 3, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	default:
		return 1
	}
	n := 1
	for ; n <= need && n < len(b); n++ {
		if b[n] < lo || b[n] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return n
}

// appendUnits decodes a string token's content to UTF-16 units, lone surrogates kept.
func appendUnits(dst []uint16, content []byte) []uint16 {
	r := unitReader{s: content}
	for u, ok := r.next(); ok; u, ok = r.next() {
		dst = append(dst, u)
	}
	return dst
}

// countUnits is len() of the string in JS.
func countUnits(content []byte) int {
	if plainASCII(content) {
		return len(content)
	}
	r := unitReader{s: content}
	n := 0
	for _, ok := r.next(); ok; _, ok = r.next() {
		n++
	}
	return n
}

// equalUnits reports whether the string token content decodes to exactly want, given as
// UTF-16 units or, for an all-ASCII source, as bytes (then a byte is a unit).
func equalUnits[U uint16 | byte](content []byte, want []U) bool {
	r := unitReader{s: content}
	for _, w := range want {
		u, ok := r.next()
		if !ok || u != uint16(w) {
			return false
		}
	}
	_, more := r.next()
	return !more
}

// plainASCII reports whether string token content is ASCII without escapes, so that its
// bytes are its UTF-16 units. Most sources are; they then need no decoding at all.
func plainASCII(content []byte) bool {
	for _, c := range content {
		if c >= utf8.RuneSelf || c == '\\' {
			return false
		}
	}
	return true
}

// decodeString turns string token content into a Go string. A lone surrogate becomes
// U+FFFD, which is also one UTF-16 unit, so offsets counted on the result still match
// the offsets the client sent.
func decodeString(content []byte) string {
	if bytes.IndexByte(content, '\\') < 0 && utf8.Valid(content) {
		return string(content)
	}
	var buf [128]uint16
	return string(utf16.Decode(appendUnits(buf[:0], content)))
}

// jsRelativeIndex resolves one String.prototype.slice argument against length n: a
// negative index counts from the end and clamps at 0, a large one clamps at n. Indices
// arrive as float64 because the JSON number may be far outside int range (1e300).
func jsRelativeIndex(x float64, n int) int {
	if x < 0 {
		x += float64(n)
		if x < 0 {
			return 0
		}
		return int(x)
	}
	if x > float64(n) {
		return n
	}
	return int(x)
}

// jsSliceBounds resolves source.slice(start, end) for a string of n units to a Go
// range; start >= end yields an empty one.
func jsSliceBounds(n int, start, end float64) (from, to int) {
	from, to = jsRelativeIndex(start, n), jsRelativeIndex(end, n)
	if from >= to {
		return 0, 0
	}
	return from, to
}

// utf16Len is s.length in JS for a Go string (invalid bytes count as one unit each).
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// sliceFromUnit is JS s.slice(from) for a Go string. Cutting through a surrogate pair
// leaves a lone low surrogate in JS; a Go string shows it as U+FFFD (one unit as well).
func sliceFromUnit(s string, from int) string {
	from = jsRelativeIndex(float64(from), utf16Len(s))
	units := 0
	for i, r := range s {
		if units == from {
			return s[i:]
		}
		units += utf16.RuneLen(r)
		if units > from {
			return "\uFFFD" + s[i+utf8.RuneLen(r):]
		}
	}
	return ""
}
