package runtime

import (
	"strings"
)

// frontMatter is a parsed front-matter block: the `---` delimited lines at the top of a
// skill file. It understands the YAML subset skill files use, without a YAML library:
//
//	key: plain value           # a comment
//	key: "double quoted \" \n"  (escapes \" \\ \n \t \r \/ \uXXXX)
//	key: 'single quoted '' ok'
//	key: [a, "b, c", 'd']      (an inline list)
//	key:                       (a block list)
//	  - a
//	  - "b"
//	key: >                     (a folded or | literal block scalar)
//	  more text
//	key: true                  (booleans: true/false, yes/no, on/off)
//
// A plain value may continue on more-indented lines (folded with spaces). Lines that fit
// none of these are ignored, as the reference's parser ignores them.
type frontMatter struct {
	values map[string]fmValue
}

type fmValue struct {
	scalar string // the value; for an inline list, the text as written
	list   []string
	isList bool
}

// splitFrontMatter returns the front matter of content and the body after it. A file
// without a block (no `---` first line, or no closing `---` or `...` line) has none and
// its whole content is the body.
func splitFrontMatter(content string) (fm frontMatter, body string, ok bool) {
	fm = frontMatter{values: map[string]fmValue{}}
	text := strings.TrimPrefix(content, "\ufeff")
	first, rest, found := strings.Cut(text, "\n")
	if !found || strings.TrimSpace(first) != "---" {
		return fm, content, false
	}
	var lines []string
	for {
		line, more, found := strings.Cut(rest, "\n")
		trimmed := strings.TrimSpace(line)
		if trimmed == "---" || trimmed == "..." {
			fm.parse(lines)
			if !found {
				more = ""
			}
			return fm, more, true
		}
		if !found {
			return frontMatter{values: map[string]fmValue{}}, content, false
		}
		lines = append(lines, strings.TrimSuffix(line, "\r"))
		rest = more
	}
}

func (fm *frontMatter) parse(lines []string) {
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if isBlankOrComment(line) || indentOf(line) > 0 {
			continue // a stray indented line: nothing to attach it to
		}
		key, raw, found := strings.Cut(line, ":")
		if !found {
			continue
		}
		key = strings.TrimSpace(unquote(strings.TrimSpace(key)))
		if key == "" {
			continue
		}
		raw = strings.TrimSpace(stripComment(raw))
		// The lines that belong to this key: following lines that are blank, comments,
		// more indented, or list items ("- a" may sit at the key's own indentation).
		j := i + 1
		for j < len(lines) && (isBlankOrComment(lines[j]) || indentOf(lines[j]) > 0 || isListItem(lines[j])) {
			j++
		}
		nested := lines[i+1 : j]
		i = j - 1
		switch {
		case raw == "":
			if items, ok := blockList(nested); ok {
				fm.values[key] = fmValue{list: items, isList: true}
			} else {
				fm.values[key] = fmValue{scalar: foldPlain("", nested)}
			}
		case strings.HasPrefix(raw, "["):
			fm.values[key] = fmValue{scalar: raw, list: inlineList(raw), isList: true}
		case raw[0] == '|' || raw[0] == '>':
			fm.values[key] = fmValue{scalar: blockScalar(raw, nested)}
		case raw[0] == '"' || raw[0] == '\'':
			fm.values[key] = fmValue{scalar: unquote(raw)}
		default:
			fm.values[key] = fmValue{scalar: foldPlain(raw, nested)}
		}
	}
}

// str returns the first of keys that is present, as a string: an inline list as written
// (so `argument-hint: [name]` keeps its brackets), a block list joined with ", ".
func (fm frontMatter) str(keys ...string) (string, bool) {
	for _, k := range keys {
		if v, ok := fm.values[k]; ok {
			if v.isList && v.scalar == "" {
				return strings.Join(v.list, ", "), true
			}
			return v.scalar, true
		}
	}
	return "", false
}

// list returns the first of keys that is present as a list. A scalar is split on commas
// (optionally wrapped in brackets), like the reference's parseKeywords.
func (fm frontMatter) list(keys ...string) ([]string, bool) {
	for _, k := range keys {
		v, ok := fm.values[k]
		if !ok {
			continue
		}
		if v.isList {
			return v.list, true
		}
		return inlineList(v.scalar), true
	}
	return nil, false
}

// boolean returns the first of keys that is present and reads as a boolean.
func (fm frontMatter) boolean(keys ...string) (value, ok bool) {
	for _, k := range keys {
		v, present := fm.values[k]
		if !present || v.isList {
			continue
		}
		switch strings.ToLower(v.scalar) {
		case "true", "yes", "on":
			return true, true
		case "false", "no", "off":
			return false, true
		}
	}
	return false, false
}

func indentOf(line string) int {
	return len(line) - len(strings.TrimLeft(line, " \t"))
}

func isBlankOrComment(line string) bool {
	t := strings.TrimSpace(line)
	return t == "" || t[0] == '#'
}

func isListItem(line string) bool {
	t := strings.TrimLeft(line, " \t")
	return t == "-" || strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "-\t")
}

// blockList reads "- item" lines; ok is false when the nested lines are not a list.
func blockList(nested []string) ([]string, bool) {
	var items []string
	for _, line := range nested {
		if isBlankOrComment(line) {
			continue
		}
		if !isListItem(line) {
			return nil, false
		}
		item := strings.TrimSpace(strings.TrimPrefix(strings.TrimLeft(line, " \t"), "-"))
		if item = scalar(item); item != "" {
			items = append(items, item)
		}
	}
	return items, len(items) > 0
}

// inlineList splits "[a, 'b, c', d]" (brackets optional) on commas outside quotes and
// drops empty items.
func inlineList(raw string) []string {
	raw = strings.TrimSpace(raw)
	if strings.HasPrefix(raw, "[") {
		raw = strings.TrimSuffix(strings.TrimPrefix(raw, "["), "]")
	}
	var items []string
	var quote byte
	start := 0
	add := func(s string) {
		if s = scalar(strings.TrimSpace(s)); s != "" {
			items = append(items, s)
		}
	}
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == ',':
			add(raw[start:i])
			start = i + 1
		}
	}
	add(raw[start:])
	return items
}

// scalar reads one value: quoted (unquoted), or plain (comment stripped).
func scalar(s string) string {
	s = strings.TrimSpace(s)
	if s != "" && (s[0] == '"' || s[0] == '\'') {
		return unquote(s)
	}
	return strings.TrimSpace(stripComment(s))
}

// stripComment removes a " #" comment from a plain (unquoted) value.
func stripComment(s string) string {
	t := strings.TrimSpace(s)
	if t != "" && (t[0] == '"' || t[0] == '\'') {
		// Keep what follows a quoted value out of it, but leave the value to unquote.
		return t
	}
	if strings.HasPrefix(t, "#") {
		return ""
	}
	for i := 1; i < len(s); i++ {
		if s[i] == '#' && (s[i-1] == ' ' || s[i-1] == '\t') {
			return s[:i]
		}
	}
	return s
}

// unquote decodes a double- or single-quoted YAML scalar; anything else (including an
// unterminated quote) is returned as is.
func unquote(s string) string {
	if len(s) < 2 {
		return s
	}
	switch s[0] {
	case '\'':
		end := closingSingle(s)
		if end < 0 {
			return s
		}
		return strings.ReplaceAll(s[1:end], "''", "'")
	case '"':
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			c := s[i]
			switch {
			case c == '"':
				return b.String()
			case c == '\\' && i+1 < len(s):
				i++
				switch s[i] {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				case 'r':
					b.WriteByte('\r')
				case '0':
					b.WriteByte(0)
				case 'u':
					if r, ok := hexRune(s, i+1, 4); ok {
						b.WriteRune(r)
						i += 4
					} else {
						b.WriteString(`\u`)
					}
				default: // \" \\ \/ and anything unknown: the character itself
					b.WriteByte(s[i])
				}
			default:
				b.WriteByte(c)
			}
		}
		return s // unterminated
	}
	return s
}

func closingSingle(s string) int {
	for i := 1; i < len(s); i++ {
		if s[i] != '\'' {
			continue
		}
		if i+1 < len(s) && s[i+1] == '\'' {
			i++
			continue
		}
		return i
	}
	return -1
}

func hexRune(s string, at, n int) (rune, bool) {
	if at+n > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range s[at : at+n] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | (c - '0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | (c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | (c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}

// foldPlain joins a plain scalar with its more-indented continuation lines.
func foldPlain(first string, nested []string) string {
	parts := []string{}
	if first != "" {
		parts = append(parts, first)
	}
	for _, line := range nested {
		if isBlankOrComment(line) {
			continue
		}
		parts = append(parts, strings.TrimSpace(stripComment(line)))
	}
	return strings.Join(parts, " ")
}

// blockScalar reads a `|` (literal) or `>` (folded) block with its chomping indicator
// ("-" strips the final newline, "+" keeps trailing blank lines, default keeps one).
func blockScalar(header string, nested []string) string {
	literal := header[0] == '|'
	chomp := byte(0)
	if strings.Contains(header, "-") {
		chomp = '-'
	} else if strings.Contains(header, "+") {
		chomp = '+'
	}
	indent := -1
	var lines []string
	for _, line := range nested {
		if strings.TrimSpace(line) == "" {
			lines = append(lines, "")
			continue
		}
		if indent < 0 {
			indent = indentOf(line)
		}
		if n := indentOf(line); n < indent {
			indent = n
		}
		lines = append(lines, line)
	}
	for i, line := range lines {
		if line != "" && indent > 0 {
			lines[i] = line[indent:]
		}
	}
	trailing := 0
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
		trailing++
	}
	var text string
	if literal {
		text = strings.Join(lines, "\n")
	} else {
		var b strings.Builder
		for i, line := range lines {
			if line == "" {
				b.WriteByte('\n') // an empty line is a line break
				continue
			}
			if i > 0 && lines[i-1] != "" {
				if strings.HasPrefix(line, " ") || strings.HasPrefix(lines[i-1], " ") {
					b.WriteByte('\n') // more-indented lines keep their line breaks
				} else {
					b.WriteByte(' ')
				}
			}
			b.WriteString(line)
		}
		text = b.String()
	}
	switch {
	case len(lines) == 0:
		return ""
	case chomp == '-':
		return text
	case chomp == '+':
		return text + "\n" + strings.Repeat("\n", trailing)
	default:
		return text + "\n"
	}
}
