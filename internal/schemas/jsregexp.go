package schemas

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"
)

// Ajv compiles "pattern" and "patternProperties" keys as JavaScript regular expressions
// with the "u" flag; Go's regexp is RE2. Most syntax means the same in both. Where it
// does not, compileJSRegexp rewrites the JavaScript meaning into RE2 or refuses what
// JavaScript refuses:
//
//   - "." matches any character but the four JavaScript line terminators (\n, \r,
//     U+2028, U+2029); RE2's excludes only \n.
//   - \s and \S use JavaScript's white space: ASCII's plus the Unicode space separators
//     (\p{Zs}), U+2028, U+2029 and U+FEFF; RE2's \s is ASCII only.
//   - \uXXXX (a surrogate pair as one character), \u{X…}, \cX and \0 are written as
//     RE2's \x{…}.
//   - [] matches nothing and [^] any character.
//   - An escape JavaScript's "u" mode rejects (\A, \z, \Q, \pL, \-, outside a class…)
//     and RE2's flag groups such as (?i) are errors, as they are for Ajv.
//
// What remains different is refused by RE2 at compile time (look-around,
// back-references), or rare: \S inside a character class keeps RE2's ASCII meaning, and
// an unescaped "{" or "]" that JavaScript's "u" mode rejects is literal in RE2.
func compileJSRegexp(src string) (*regexp.Regexp, error) {
	re2, err := translateJSRegexp(src)
	if err != nil {
		return nil, err
	}
	return regexp.Compile(re2)
}

// isJSRegexp is the "regex" format: a string compileJSRegexp accepts (any other value
// passes, as formats only apply to strings).
func isJSRegexp(v any) bool {
	s, ok := v.(string)
	if !ok {
		return true
	}
	_, err := compileJSRegexp(s)
	return err == nil
}

// jsSpace is JavaScript's \s as the inside of an RE2 character class.
const jsSpace = `\t\n\v\f\r\p{Zs}\x{2028}\x{2029}\x{FEFF}`

// jsSyntaxChars may be escaped anywhere in "u" mode ("-" only inside a class).
const jsSyntaxChars = `^$\.*+?()[]{}|/`

func translateJSRegexp(src string) (string, error) {
	rs := []rune(src)
	var b strings.Builder
	inClass := false
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case c == '\\':
			n, err := translateEscape(&b, rs, i+1, inClass)
			if err != nil {
				return "", err
			}
			i += n
		case inClass:
			switch c {
			case ']':
				inClass = false
				b.WriteRune(c)
			case '[': // literal in JavaScript; RE2 would read "[:alpha:]" as a POSIX class
				b.WriteString(`\[`)
			default:
				b.WriteRune(c)
			}
		case c == '[':
			switch {
			case i+1 < len(rs) && rs[i+1] == ']':
				b.WriteString(`[^\x{0}-\x{10FFFF}]`) // [] matches nothing
				i++
			case i+2 < len(rs) && rs[i+1] == '^' && rs[i+2] == ']':
				b.WriteString(`[\x{0}-\x{10FFFF}]`) // [^] matches anything
				i += 2
			default:
				inClass = true
				b.WriteRune(c)
				if i+1 < len(rs) && rs[i+1] == '^' {
					b.WriteRune('^')
					i++
				}
			}
		case c == '.':
			b.WriteString(`[^\n\r\x{2028}\x{2029}]`)
		case c == '(' && i+1 < len(rs) && rs[i+1] == '?':
			rest := string(rs[i+2:])
			if !(strings.HasPrefix(rest, ":") || strings.HasPrefix(rest, "=") || strings.HasPrefix(rest, "!") ||
				strings.HasPrefix(rest, "<")) {
				return "", fmt.Errorf("invalid group at offset %d", i)
			}
			b.WriteRune(c)
		default:
			b.WriteRune(c)
		}
	}
	if inClass {
		return "", errors.New("missing closing ]")
	}
	return b.String(), nil
}

// translateEscape writes the escape whose letter is at rs[at] and returns how many runes
// it used after the backslash.
func translateEscape(b *strings.Builder, rs []rune, at int, inClass bool) (int, error) {
	if at >= len(rs) {
		return 0, errors.New(`\ at end of pattern`)
	}
	e := rs[at]
	switch e {
	case 'd', 'D', 'w', 'W', 'f', 'n', 'r', 't', 'v':
		b.WriteRune('\\')
		b.WriteRune(e)
		return 1, nil
	case 'b', 'B':
		if inClass && e == 'B' {
			return 0, errors.New(`invalid escape \B in a class`)
		}
		if inClass { // backspace in a class
			b.WriteString(`\x{8}`)
		} else {
			b.WriteRune('\\')
			b.WriteRune(e)
		}
		return 1, nil
	case 's':
		if inClass {
			b.WriteString(jsSpace)
		} else {
			b.WriteString("[" + jsSpace + "]")
		}
		return 1, nil
	case 'S':
		if inClass {
			b.WriteString(`\S`)
		} else {
			b.WriteString("[^" + jsSpace + "]")
		}
		return 1, nil
	case 'x':
		if at+2 < len(rs) && isHex(rs[at+1]) && isHex(rs[at+2]) {
			fmt.Fprintf(b, `\x{%s}`, string(rs[at+1:at+3]))
			return 3, nil
		}
		return 0, errors.New(`invalid escape \x`)
	case 'u':
		r, n, ok := unicodeEscape(rs, at+1)
		if !ok {
			return 0, errors.New(`invalid escape \u`)
		}
		fmt.Fprintf(b, `\x{%X}`, r)
		return 1 + n, nil
	case 'c':
		if at+1 < len(rs) && (rs[at+1] >= 'a' && rs[at+1] <= 'z' || rs[at+1] >= 'A' && rs[at+1] <= 'Z') {
			fmt.Fprintf(b, `\x{%X}`, rs[at+1]%32)
			return 2, nil
		}
		return 0, errors.New(`invalid escape \c`)
	case '0':
		if at+1 < len(rs) && rs[at+1] >= '0' && rs[at+1] <= '9' {
			return 0, errors.New(`invalid escape \0 followed by a digit`)
		}
		b.WriteString(`\x{0}`)
		return 1, nil
	case 'p', 'P':
		end := -1
		if at+1 < len(rs) && rs[at+1] == '{' {
			for j := at + 2; j < len(rs); j++ {
				if rs[j] == '}' {
					end = j
					break
				}
			}
		}
		if end < 0 {
			return 0, fmt.Errorf(`invalid escape \%c without {name}`, e)
		}
		b.WriteString(`\` + string(rs[at:end+1]))
		return end - at + 1, nil
	}
	if e >= '1' && e <= '9' || e == 'k' {
		// A back-reference: RE2 has none, and regexp.Compile says so.
		b.WriteRune('\\')
		b.WriteRune(e)
		return 1, nil
	}
	if strings.ContainsRune(jsSyntaxChars, e) || inClass && e == '-' {
		b.WriteRune('\\')
		b.WriteRune(e)
		return 1, nil
	}
	return 0, fmt.Errorf(`invalid escape \%c`, e)
}

// unicodeEscape reads the character of \uXXXX (joining a \uXXXX\uXXXX surrogate pair)
// or \u{X…} at rs[at:], and how many runes it used.
func unicodeEscape(rs []rune, at int) (rune, int, bool) {
	if at < len(rs) && rs[at] == '{' {
		for j := at + 1; j < len(rs) && j <= at+7; j++ {
			if rs[j] == '}' {
				v, err := strconv.ParseUint(string(rs[at+1:j]), 16, 32)
				if err != nil || v > 0x10FFFF {
					return 0, 0, false
				}
				return rune(v), j - at + 1, true
			}
		}
		return 0, 0, false
	}
	hex4 := func(at int) (rune, bool) {
		if at+4 > len(rs) {
			return 0, false
		}
		v, err := strconv.ParseUint(string(rs[at:at+4]), 16, 32)
		return rune(v), err == nil
	}
	hi, ok := hex4(at)
	if !ok {
		return 0, 0, false
	}
	if utf16.IsSurrogate(hi) && at+10 <= len(rs) && rs[at+4] == '\\' && rs[at+5] == 'u' {
		if lo, ok := hex4(at + 6); ok {
			if r := utf16.DecodeRune(hi, lo); r != '\uFFFD' {
				return r, 10, true
			}
		}
	}
	return hi, 4, true
}

func isHex(r rune) bool {
	return r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F'
}
