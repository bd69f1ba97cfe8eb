package slashcmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"unicode"
)

// Invocation is the composer text that runs command name with args, given its declared
// argument names in order: "/name" and the values in declaration order. A value after a
// skipped argument is written name=value (its position no longer says which it is). A
// value that is empty, or has whitespace, a quote, a backslash or '=' in it, is written
// as a JSON string, so that it reads as one value and never as another argument's
// name=value: ParseInvocation gives back exactly args.
func Invocation(name string, declared []string, args map[string]string) string {
	var b strings.Builder
	b.WriteString("/" + name)
	skipped := false
	for _, a := range declared {
		v, ok := args[a]
		if !ok {
			skipped = true
			continue
		}
		b.WriteByte(' ')
		if skipped {
			b.WriteString(a + "=")
		}
		b.WriteString(quoteValue(v))
	}
	return b.String()
}

// quoteValue writes v bare when it reads back as itself, else as a JSON string (no HTML
// escaping: the text is read by people and models).
func quoteValue(v string) string {
	if v != "" && !strings.ContainsFunc(v, func(r rune) bool {
		return unicode.IsSpace(r) || r == '"' || r == '\'' || r == '\\' || r == '='
	}) {
		return v
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // a string always encodes
	return strings.TrimSuffix(buf.String(), "\n")
}

// ErrInvocation is an invocation text ParseInvocation cannot read.
var ErrInvocation = errors.New("slashcmd: not an invocation")

// ParseInvocation reads what Invocation writes: the command name and its arguments by
// declared name. Bare values fill the declared arguments in order; name=value names one
// (the values after it continue from there); a value starting with '"' is a JSON string.
func ParseInvocation(text string, declared []string) (string, map[string]string, error) {
	rest, ok := strings.CutPrefix(text, "/")
	if !ok {
		return "", nil, ErrInvocation
	}
	end := strings.IndexFunc(rest, unicode.IsSpace)
	if end < 0 {
		end = len(rest)
	}
	name, rest := rest[:end], rest[end:]
	if name == "" {
		return "", nil, ErrInvocation
	}
	index := map[string]int{}
	for i, a := range declared {
		index[a] = i
	}
	args := map[string]string{}
	next := 0 // the declared argument the next bare value fills
	for {
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
		if rest == "" {
			return name, args, nil
		}
		target := -1
		if eq := strings.IndexByte(rest, '='); eq > 0 && !strings.ContainsFunc(rest[:eq], isSeparator) {
			if i, known := index[rest[:eq]]; known {
				target, rest = i, rest[eq+1:]
			}
		}
		if target < 0 {
			if next >= len(declared) {
				return "", nil, ErrInvocation // more values than arguments
			}
			target = next
		}
		v, after, err := readValue(rest)
		if err != nil {
			return "", nil, err
		}
		if _, dup := args[declared[target]]; dup {
			return "", nil, ErrInvocation
		}
		args[declared[target]] = v
		next, rest = target+1, after
	}
}

func isSeparator(r rune) bool { return unicode.IsSpace(r) || r == '"' }

// readValue reads one value at the start of s: a JSON string, or the text up to the next
// whitespace.
func readValue(s string) (string, string, error) {
	if !strings.HasPrefix(s, `"`) {
		end := strings.IndexFunc(s, unicode.IsSpace)
		if end < 0 {
			end = len(s)
		}
		return s[:end], s[end:], nil
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++ // the escaped character
		case '"':
			var v string
			if err := json.Unmarshal([]byte(s[:i+1]), &v); err != nil {
				return "", "", ErrInvocation
			}
			return v, s[i+1:], nil
		}
	}
	return "", "", ErrInvocation // unterminated
}
