package shapes

import (
	"fmt"
	"strconv"
	"strings"
)

// A where clause in the subset entityd evaluates itself: conditions joined by AND, each
//
//	column = 'text' | column <> 'text' | column != 'text'
//	column IN ('a', 'b', ...) | column NOT IN (...)
//	column IS NULL | column IS NOT NULL
//
// where a value may also be $n, taken from params[n]. That covers the list filters of
// Electric's clients (type, status, parent, tags are filtered client-side).
type condition struct {
	column string
	op     string // "=", "<>", "in", "not in", "null", "not null"
	values []string
}

type where []condition

// whereError is a where clause the server refuses (400 INVALID_WHERE).
type whereError struct{ msg string }

func (e *whereError) Error() string { return e.msg }

func badWhere(format string, args ...any) error { return &whereError{fmt.Sprintf(format, args...)} }

// checkWhereText refuses what Electric's proxy refuses before parsing: unbalanced
// parentheses, an unclosed quote, a comment.
func checkWhereText(s string) error {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'' || c == '"':
			j := i + 1
			for ; j < len(s); j++ {
				if s[j] == c {
					if j+1 < len(s) && s[j+1] == c { // doubled quote
						j++
						continue
					}
					break
				}
			}
			if j >= len(s) {
				return badWhere("unclosed quote in where")
			}
			i = j
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth < 0 {
				return badWhere("unbalanced parentheses in where")
			}
		case c == '-' && i+1 < len(s) && s[i+1] == '-', c == '/' && i+1 < len(s) && s[i+1] == '*':
			return badWhere("comments are not allowed in where")
		case c == ';':
			return badWhere("a where clause is one expression")
		}
	}
	if depth != 0 {
		return badWhere("unbalanced parentheses in where")
	}
	return nil
}

// parseWhere reads the subset above against the table's columns.
func parseWhere(s string, t *table, params map[string]string) (where, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	if err := checkWhereText(s); err != nil {
		return nil, err
	}
	toks, err := tokenize(s)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, params: params}
	var w where
	for {
		c, err := p.condition(t)
		if err != nil {
			return nil, err
		}
		w = append(w, c)
		if p.done() {
			return w, nil
		}
		if !p.keyword("and") {
			return nil, badWhere("only conditions joined by AND are supported in where (at %q)", p.peek())
		}
	}
}

// match reports whether a row (column → text value, nil for NULL) passes every condition.
func (w where) match(row map[string]*string) bool {
	for _, c := range w {
		v := row[c.column]
		switch c.op {
		case "null":
			if v != nil {
				return false
			}
		case "not null":
			if v == nil {
				return false
			}
		case "=", "in":
			if v == nil || !contains(c.values, *v) {
				return false
			}
		case "<>", "not in":
			if v == nil || contains(c.values, *v) {
				return false
			}
		}
	}
	return true
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

type token struct {
	kind string // "ident", "string", "param", "op", "(", ")", ","
	text string
}

func tokenize(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(' || c == ')' || c == ',':
			out = append(out, token{string(c), string(c)})
			i++
		case c == '=':
			out = append(out, token{"op", "="})
			i++
		case c == '<' && i+1 < len(s) && s[i+1] == '>', c == '!' && i+1 < len(s) && s[i+1] == '=':
			out = append(out, token{"op", "<>"})
			i += 2
		case c == '\'' || c == '"':
			var b strings.Builder
			j := i + 1
			for ; j < len(s); j++ {
				if s[j] == c {
					if j+1 < len(s) && s[j+1] == c {
						b.WriteByte(c)
						j++
						continue
					}
					break
				}
				b.WriteByte(s[j])
			}
			kind := "string"
			if c == '"' {
				kind = "ident"
			}
			out = append(out, token{kind, b.String()})
			i = j + 1
		case c == '$':
			j := i + 1
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			if j == i+1 {
				return nil, badWhere("a parameter is $ and a number")
			}
			out = append(out, token{"param", s[i+1 : j]})
			i = j
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			out = append(out, token{"ident", s[i:j]})
			i = j
		default:
			return nil, badWhere("unsupported character %q in where", string(c))
		}
	}
	return out, nil
}

type parser struct {
	toks   []token
	i      int
	params map[string]string
}

func (p *parser) done() bool { return p.i >= len(p.toks) }

func (p *parser) peek() string {
	if p.done() {
		return "end of where"
	}
	return p.toks[p.i].text
}

func (p *parser) keyword(k string) bool {
	if !p.done() && p.toks[p.i].kind == "ident" && strings.EqualFold(p.toks[p.i].text, k) {
		p.i++
		return true
	}
	return false
}

func (p *parser) value() (string, error) {
	if p.done() {
		return "", badWhere("a value is missing at the end of where")
	}
	t := p.toks[p.i]
	p.i++
	switch t.kind {
	case "string":
		return t.text, nil
	case "param":
		v, ok := p.params[t.text]
		if !ok {
			return "", badWhere("where uses $%s, which params does not give", t.text)
		}
		return v, nil
	case "ident":
		if _, err := strconv.ParseFloat(t.text, 64); err == nil {
			return t.text, nil
		}
	}
	return "", badWhere("expected a quoted value or $n, got %q", t.text)
}

func (p *parser) condition(t *table) (condition, error) {
	if p.done() || p.toks[p.i].kind != "ident" {
		return condition{}, badWhere("expected a column at %q", p.peek())
	}
	col := p.toks[p.i].text
	p.i++
	if _, ok := t.types[col]; !ok {
		return condition{}, badWhere("unknown column %q in where", col)
	}
	c := condition{column: col}
	switch {
	case p.keyword("is"):
		c.op = "null"
		if p.keyword("not") {
			c.op = "not null"
		}
		if !p.keyword("null") {
			return condition{}, badWhere("expected NULL after IS")
		}
		return c, nil
	case p.keyword("not"):
		if !p.keyword("in") {
			return condition{}, badWhere("expected IN after NOT")
		}
		c.op = "not in"
		return p.list(c)
	case p.keyword("in"):
		c.op = "in"
		return p.list(c)
	}
	if p.done() || p.toks[p.i].kind != "op" {
		return condition{}, badWhere("expected =, <>, IN or IS after %q", col)
	}
	c.op = p.toks[p.i].text
	p.i++
	v, err := p.value()
	if err != nil {
		return condition{}, err
	}
	c.values = []string{v}
	return c, nil
}

func (p *parser) list(c condition) (condition, error) {
	if p.done() || p.toks[p.i].kind != "(" {
		return condition{}, badWhere("expected ( after IN")
	}
	p.i++
	for {
		v, err := p.value()
		if err != nil {
			return condition{}, err
		}
		c.values = append(c.values, v)
		if !p.done() && p.toks[p.i].kind == "," {
			p.i++
			continue
		}
		if !p.done() && p.toks[p.i].kind == ")" {
			p.i++
			return c, nil
		}
		return condition{}, badWhere("expected , or ) in an IN list")
	}
}
