package runtime

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A skill file's front matter is the YAML block between a first line `---` and the next
// line `---` or `...`. It is read with a YAML library (YAML 1.2, with the 1.1 booleans
// yes/no/on/off where a boolean is expected), so the whole of YAML works — quoting,
// comments, flow and block lists, folded and literal block scalars, anchors and merge
// keys — and anything that is not YAML is an error that names the file's line:
//
//	description: "Find things: fast"   (a plain value cannot hold ": "; quote it)
//	keywords: [search, "b, c"]         (a list; a string is split on commas)
//	user-invocable: false              (true/false, yes/no, on/off)
//
// Keys other than the ones Skill reads are ignored whatever their value, so front matter
// written for other tools (allowed-tools, metadata, …) does no harm.

// maxFrontMatterBytes bounds the block handed to the YAML parser. Real front matter is a
// few hundred bytes; the bound keeps a pathological file (YAML's duplicate-key check is
// quadratic in the number of keys: 2,000 keys take ~15 ms) to tens of milliseconds, once
// per file version (the loader caches what it parsed by content hash).
// Nesting inside it is bounded by the parser (10,000 levels) and alias expansion by its
// aliasing limit; the values Skill reads are at most a list of scalars.
const maxFrontMatterBytes = 16 << 10

// frontMatter is what a skill's front matter says. A nil field was not given.
type frontMatter struct {
	description, whenToUse, argumentHint *string
	keywords, arguments                  *[]string
	userInvocable                        *bool
}

// frontMatterYAML is the mapping the YAML is decoded into: the keys Skill reads, each
// spelling the reference or other skill tools use, kept as nodes so that an error can
// name its line. Decoding into a struct also rejects a key given twice.
type frontMatterYAML struct {
	Description yaml.Node `yaml:"description"`

	WhenToUse      yaml.Node `yaml:"whenToUse"`
	WhenToUseSnake yaml.Node `yaml:"when_to_use"`
	WhenToUseKebab yaml.Node `yaml:"when-to-use"`

	Keywords  yaml.Node `yaml:"keywords"`
	Arguments yaml.Node `yaml:"arguments"`

	ArgumentHint      yaml.Node `yaml:"argument-hint"`
	ArgumentHintSnake yaml.Node `yaml:"argument_hint"`
	ArgumentHintCamel yaml.Node `yaml:"argumentHint"`

	UserInvocable      yaml.Node `yaml:"user-invocable"`
	UserInvocableSnake yaml.Node `yaml:"user_invocable"`
	UserInvocableCamel yaml.Node `yaml:"userInvocable"`
}

// splitFrontMatter returns the YAML of content's front-matter block and the body after
// it. The YAML starts with an empty line standing for the opening `---`, so that the
// parser's line numbers are the file's. A file without a block (no `---` first line, or
// no closing `---` or `...` line) has none and its whole content is the body.
func splitFrontMatter(content string) (yamlText, body string, found bool) {
	text := strings.TrimPrefix(content, "\ufeff")
	first, rest, ok := strings.Cut(text, "\n")
	if !ok || strings.TrimSpace(first) != "---" {
		return "", content, false
	}
	block := rest
	for {
		line, more, ok := strings.Cut(rest, "\n")
		if t := strings.TrimSpace(line); t == "---" || t == "..." {
			if !ok {
				more = ""
			}
			return "\n" + block[:len(block)-len(rest)], more, true
		}
		if !ok {
			return "", content, false
		}
		rest = more
	}
}

// parseFrontMatter reads the YAML of a front-matter block. Any error (the YAML does not
// parse, is not a mapping, or gives a key Skill reads a value of the wrong kind) says
// which line; the front matter is then not used at all.
func parseFrontMatter(yamlText string) (frontMatter, error) {
	if len(yamlText) > maxFrontMatterBytes {
		return frontMatter{}, fmt.Errorf("front matter: longer than %d bytes", maxFrontMatterBytes)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(yamlText), &doc); err != nil {
		return frontMatter{}, fmt.Errorf("front matter: %w", err)
	}
	if len(doc.Content) == 0 {
		return frontMatter{}, nil // empty, or only comments
	}
	root := resolveAlias(doc.Content[0])
	if isNull(root) {
		return frontMatter{}, nil // a lone "~" or "null"
	}
	if root.Kind != yaml.MappingNode {
		return frontMatter{}, fmt.Errorf("front matter: line %d: must be a mapping of keys to values, not %s", root.Line, kindName(root))
	}
	var raw frontMatterYAML
	if err := root.Decode(&raw); err != nil {
		return frontMatter{}, fmt.Errorf("front matter: %w", err)
	}
	var fm frontMatter
	r := fieldReader{}
	fm.description = r.text("description", &raw.Description)
	fm.whenToUse = r.text("whenToUse", &raw.WhenToUse, &raw.WhenToUseSnake, &raw.WhenToUseKebab)
	fm.keywords = r.list("keywords", &raw.Keywords)
	fm.arguments = r.list("arguments", &raw.Arguments)
	fm.argumentHint = r.text("argument-hint", &raw.ArgumentHint, &raw.ArgumentHintSnake, &raw.ArgumentHintCamel)
	fm.userInvocable = r.boolean("user-invocable", &raw.UserInvocable, &raw.UserInvocableSnake, &raw.UserInvocableCamel)
	if r.err != nil {
		return frontMatter{}, fmt.Errorf("front matter: %w", r.err)
	}
	return fm, nil
}

// fieldReader turns the decoded nodes into values, keeping the first error.
type fieldReader struct{ err error }

// first returns the first of nodes that was given (a key's spellings, in order of
// preference), resolved if it is an alias.
func first(nodes ...*yaml.Node) *yaml.Node {
	for _, n := range nodes {
		if n.Kind != 0 {
			return resolveAlias(n)
		}
	}
	return nil
}

func (r *fieldReader) fail(n *yaml.Node, key, format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("line %d: %s: %s", n.Line, key, fmt.Sprintf(format, args...))
	}
}

// text reads a string. A list is accepted as the text it stands for, so that an
// unquoted `argument-hint: [name]` (a YAML list) reads "[name]" as in the reference; a
// block list is joined with ", ". null reads as "".
func (r *fieldReader) text(key string, nodes ...*yaml.Node) *string {
	n := first(nodes...)
	if n == nil {
		return nil
	}
	var s string
	switch {
	case isNull(n):
	case n.Kind == yaml.ScalarNode:
		s = n.Value
	case n.Kind == yaml.SequenceNode:
		items, ok := r.scalars(key, n)
		if !ok {
			return nil
		}
		s = strings.Join(items, ", ")
		if n.Style&yaml.FlowStyle != 0 {
			s = "[" + s + "]"
		}
	default:
		r.fail(n, key, "must be text, not %s", kindName(n))
		return nil
	}
	return &s
}

// list reads a list of strings: a YAML list of scalars, or a string split on commas
// (within optional brackets, like the reference's parseKeywords). Empty items are
// dropped; null is the empty list.
func (r *fieldReader) list(key string, nodes ...*yaml.Node) *[]string {
	n := first(nodes...)
	if n == nil {
		return nil
	}
	var items []string
	switch {
	case isNull(n):
	case n.Kind == yaml.ScalarNode:
		v := strings.TrimSpace(n.Value)
		v = strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				items = append(items, item)
			}
		}
	case n.Kind == yaml.SequenceNode:
		all, ok := r.scalars(key, n)
		if !ok {
			return nil
		}
		for _, item := range all {
			if item = strings.TrimSpace(item); item != "" {
				items = append(items, item)
			}
		}
	default:
		r.fail(n, key, "must be a list, not %s", kindName(n))
		return nil
	}
	return &items
}

// scalars returns the values of a list whose items are all scalars (null items are
// skipped).
func (r *fieldReader) scalars(key string, n *yaml.Node) ([]string, bool) {
	items := make([]string, 0, len(n.Content))
	for _, item := range n.Content {
		item = resolveAlias(item)
		switch {
		case isNull(item):
		case item.Kind == yaml.ScalarNode:
			items = append(items, item.Value)
		default:
			r.fail(item, key, "list items must be text, not %s", kindName(item))
			return nil, false
		}
	}
	return items, true
}

// boolean reads true/false (YAML 1.2) or yes/no, on/off, y/n (YAML 1.1, which the
// library accepts where a boolean is expected).
func (r *fieldReader) boolean(key string, nodes ...*yaml.Node) *bool {
	n := first(nodes...)
	if n == nil {
		return nil
	}
	var b bool
	if n.Kind != yaml.ScalarNode || isNull(n) || n.Decode(&b) != nil {
		what := kindName(n)
		if n.Kind == yaml.ScalarNode && !isNull(n) {
			what = fmt.Sprintf("%q", n.Value)
		}
		r.fail(n, key, "must be true or false, not %s", what)
		return nil
	}
	return &b
}

// resolveAlias returns the node an alias (*name) stands for.
func resolveAlias(n *yaml.Node) *yaml.Node {
	// The parser rejects an alias to an undefined anchor, and an anchor cannot refer to
	// itself, so this ends; the bound is only a guard.
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a scalar"
	}
	return "nothing"
}

// readFrontMatter splits content and reads its front matter. The body is the text after
// the block, also when the front matter has an error.
func readFrontMatter(content string) (fm frontMatter, body string, err error) {
	yamlText, body, found := splitFrontMatter(content)
	if !found {
		return frontMatter{}, body, nil
	}
	fm, err = parseFrontMatter(yamlText)
	return fm, body, err
}
