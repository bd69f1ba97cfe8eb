// Package schemas checks and applies the JSON Schemas that entity types declare
// (creation_schema, inbox_schemas, state_schemas), reproducing what the Electric Agents
// reference server does with Ajv v8 (default class = draft-07, allErrors, strict mode,
// no ajv-formats).
//
// There are three layers:
//
//   - CheckKeywords: the registration-time keyword allowlist (400 INVALID_REQUEST
//     "Schema uses disallowed keywords").
//   - Compile: turns a schema into a *Schema. A failure (invalid schema, bad regex,
//     unresolvable or remote $ref, infinitely recursive $ref, ...) is an error whose
//     message can be returned in a 400 response.
//   - (*Schema).Validate: validates an instance and returns Ajv-style {path, message}
//     details (allErrors), or nil when the instance is valid. Cache shares compiled
//     schemas by content hash.
//
// # How the validator is built
//
// jsonschema/v5 validates the schema document against the draft-07 meta-schema (so
// invalid schemas are rejected like Ajv's validateSchema does) and provides the format
// checkers. The validator itself is our own: v5 reports errors in its own words, in its
// own order, ignores $ref siblings in draft-07 and keeps properties in Go maps, while
// Ajv v8 applies $ref siblings, reports in a fixed keyword order and walks object keys in
// JavaScript order. Reproducing Ajv's output needs all of that.
//
// testdata/ajv-cases.json holds schemas and instances that real Ajv (with the reference's
// options) has judged in testdata/ajv-golden.json; golden_test.go requires the same
// outcome and details byte for byte, except for the decisions below, which it lists.
//
// # Error order (deterministic, and the same as Ajv v8 with allErrors)
//
// For each schema object, in this order:
//
//  1. the type error, when the schema's type is not a single one of
//     number/string/array/object that has keywords of its own group (see 6);
//  2. $ref (siblings of $ref are applied, as in Ajv v8);
//  3. const, enum;
//  4. not, anyOf, oneOf, allOf, if/then/else;
//  5. number keywords: maximum, minimum, exclusiveMaximum, exclusiveMinimum, multipleOf;
//     string keywords: maxLength, minLength, pattern, format;
//     array keywords: maxItems, minItems, additionalItems, items, contains, uniqueItems;
//     object keywords: maxProperties, minProperties, required (one error per missing
//     property, in the order of the required array), propertyNames, additionalProperties
//     (one error per extra key), dependencies, properties (in schema key order),
//     patternProperties;
//  6. when the type is a single number/string/array/object and the schema has keywords of
//     that group, the type error is reported at that group's place instead of first.
//
// Composite keywords follow Ajv: anyOf stops at the first passing branch and, when all
// fail, keeps every branch's errors followed by "must match a schema in anyOf"; oneOf
// evaluates the branches in order until a second one passes and, unless exactly one
// passed, keeps the errors of the failing branches it evaluated followed by "must match
// exactly one schema in oneOf"; not and if never leak their
// subschema's errors. Object keys are visited in JavaScript order: array-index-like keys
// ("0", "17") first in numeric order, then the others in document order. The instance
// path is a JSON pointer, "/" for the root; additionalProperties and required errors are
// reported at the object's path, as Ajv does.
//
// # Decisions
//
//   - format: the reference (Ajv strict, no ajv-formats) would throw "unknown format" when
//     a schema using format is first compiled. We assert the formats jsonschema/v5 knows
//     (date-time, date, time, duration, email, hostname, ipv4, ipv6, uri, uri-reference,
//     uri-template, iri, iri-reference, json-pointer, relative-json-pointer, regex, uuid,
//     period) on strings, with the message `must match format "<name>"`, and ignore
//     unknown format names.
//   - nullable: true (OpenAPI) lets null pass in addition to the declared type, exactly as
//     Ajv v8 does (the type error still says "must be <declared type>"; nullable does not
//     add null to an enum). Where Ajv throws at compile time ("nullable" without "type",
//     or nullable:false with a type that includes "null") we ignore nullable instead.
//   - Unknown keywords are ignored by Compile (Ajv strict mode would throw); registration
//     rejects them earlier through CheckKeywords. So are the keywords strict mode throws
//     on because Ajv would ignore them: "if" without "then"/"else", "additionalItems"
//     without an array "items", and a property that also matches a patternProperties
//     pattern (which Compile validates against both).
//   - $ref: local references only: JSON pointers ("#/definitions/x", "#/$defs/x"), $id
//     based URIs and draft-07 "#name" anchors inside the same document. A $ref to any other
//     document (http(s), file, relative) is a compile error; the loader never touches the
//     network or the filesystem. $schema must be absent or draft-07.
//   - A $ref/allOf/anyOf/oneOf/not/if/then/else/dependencies cycle that never moves to a
//     child of the instance (e.g. {"$ref":"#"}) is a compile error; Ajv would overflow its
//     stack at validation time.
//   - Work is bounded: a Validate call that exceeds an evaluation budget stops and reports
//     a single detail at "/" with MessageTooComplex. Instances nested deeper than 10000
//     JSON levels and schemas nested deeper than 512 are rejected when decoding.
//   - Regular expressions are JavaScript's with the "u" flag, as in Ajv, run by Go's RE2
//     (jsregexp.go rewrites ".", \s, \u escapes and the like into their JavaScript
//     meaning): look-around and back-references do not compile.
//   - Properties are own properties only (Ajv's `data[prop] !== undefined` also sees
//     inherited members such as "constructor"). Numbers are float64 like in JavaScript;
//     a number too large for float64 is not a number (Ajv strictNumbers), and uniqueItems
//     uses deep equality.
package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/entityd/entityd/internal/rawjson"
)

// maxDepth bounds JSON nesting in instances, maxSchemaDepth in schemas (the compiler
// keeps a JSON pointer per subschema, so very deep schemas would cost quadratic memory).
const (
	maxDepth       = 10000
	maxSchemaDepth = 512
)

// ---------------------------------------------------------------------------
// Ordered JSON: objects keep JavaScript key order, numbers are float64.

// object is a JSON object whose keys are in JavaScript enumeration order.
type object struct {
	keys []string
	vals map[string]any
}

func (o *object) get(k string) (any, bool) {
	v, ok := o.vals[k]
	return v, ok
}

// decodeJSON decodes one JSON document. Values are nil, bool, float64, string, []any
// and *object. A number outside float64's range becomes ±Inf.
func decodeJSON(data []byte, limit int) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := readValue(dec, 0, limit)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

func readValue(dec *json.Decoder, depth, limit int) (any, error) {
	if depth > limit {
		return nil, fmt.Errorf("JSON nested deeper than %d levels", limit)
	}
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{vals: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, errors.New("invalid object key")
				}
				v, err := readValue(dec, depth+1, limit)
				if err != nil {
					return nil, err
				}
				if _, dup := o.vals[k]; !dup {
					o.keys = append(o.keys, k) // JSON.parse: first position, last value
				}
				o.vals[k] = v
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			o.keys = rawjson.JSKeyOrder(o.keys)
			return o, nil
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := readValue(dec, depth+1, limit)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return arr, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, err
		}
		return f, nil
	default: // nil, bool, string
		return t, nil
	}
}

// ---------------------------------------------------------------------------
// Compiled form.

type numLimit struct {
	kind  int // limMaximum, ...
	value float64
}

const (
	limMaximum = iota
	limMinimum
	limExclusiveMaximum
	limExclusiveMinimum
)

type patternProp struct {
	src  string
	re   *regexp.Regexp
	node *node
}

type propDep struct {
	prop string
	deps []string
}

type schemaDep struct {
	prop string
	node *node
}

// node is one compiled schema (object or boolean). Nodes form a graph (cycles through
// $ref are allowed as long as they pass through an instance child) and are immutable
// once Compile returns.
type node struct {
	ptr    string // JSON pointer of this schema in the document ("" = root)
	always *bool  // boolean schema
	empty  bool   // no validation keywords: always valid

	types     []string // allowed types, incl. "null" added by nullable
	typeMsg   string   // "must be <type keyword>"
	earlyType bool     // report the type error before the keywords
	lateType  string   // group at whose place the type error is reported

	ref *node

	hasConst bool
	constVal any
	hasEnum  bool
	enum     []any

	not          *node
	anyOf        []*node
	oneOf        []*node
	allOf        []*node
	ifN          *node
	thenN, elseN *node

	// number group
	numberRules bool
	limits      []numLimit
	multipleOf  float64 // 0 = absent

	// string group
	stringRules bool
	maxLength   float64 // -1 = absent
	minLength   float64
	pattern     *regexp.Regexp
	patternSrc  string
	format      func(any) bool
	formatName  string

	// array group
	arrayRules      bool
	maxItems        float64
	minItems        float64
	itemsOne        *node
	itemsTuple      []*node
	tuple           bool
	addItemsFalse   bool
	addItems        *node
	contains        *node
	uniqueItems     bool
	uniqueItemTypes []string // types of items (Ajv's optimized loop when all scalar)

	// object group
	objectRules   bool
	maxProps      float64
	minProps      float64
	required      []string
	propertyNames *node
	apFalse       bool
	apSchema      *node
	propOrder     []string
	props         map[string]*node
	patternProps  []patternProp
	propDeps      []propDep
	schemaDeps    []schemaDep
}

// Schema is a compiled JSON Schema. It is immutable and safe for concurrent Validate.
type Schema struct {
	root *node
}

// ---------------------------------------------------------------------------
// Compile.

// rootBase is the base URI of a schema without $id. It is only used to resolve
// references inside the document; nothing is ever loaded from it.
const rootBase = "entityd-schema:///root.json"

var (
	metaOnce   sync.Once
	metaSchema *jsonschema.Schema
	metaErr    error
)

func draft07Meta() (*jsonschema.Schema, error) {
	metaOnce.Do(func() {
		c := jsonschema.NewCompiler()
		c.LoadURL = refuseLoad
		metaSchema, metaErr = c.Compile("http://json-schema.org/draft-07/schema")
	})
	return metaSchema, metaErr
}

func refuseLoad(u string) (io.ReadCloser, error) {
	return nil, fmt.Errorf("loading %q is not allowed", u)
}

// Compile compiles a draft-07 JSON Schema ($defs is accepted too). The error's message
// explains what is wrong and is meant for a 400 response.
func Compile(schema json.RawMessage) (s *Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("invalid JSON Schema: %v", r)
		}
	}()
	doc, err := decodeJSON(schema, maxSchemaDepth)
	if err != nil {
		return nil, fmt.Errorf("invalid JSON Schema: %v", err)
	}
	switch doc.(type) {
	case bool, *object:
	default:
		return nil, errors.New("invalid JSON Schema: must be a JSON object or boolean")
	}
	c := &compiler{
		doc:       doc,
		nodes:     map[string]*node{},
		resources: map[string]string{},
		anchors:   map[string]string{},
	}
	if o, ok := doc.(*object); ok {
		if v, ok := o.get("$schema"); ok {
			sch, _ := v.(string)
			if !isDraft07(sch) {
				return nil, fmt.Errorf("invalid JSON Schema: unsupported $schema %q (only draft-07 is supported)", sch)
			}
		}
	}
	rootURI, err := c.indexIDs()
	if err != nil {
		return nil, err
	}
	c.rootURI = rootURI
	root, err := c.compile("")
	if err != nil {
		return nil, err
	}
	if err := checkLoops(root); err != nil {
		return nil, err
	}
	// The compiler has checked every reachable schema with its own, more specific
	// messages; the meta-schema also covers parts that are never used.
	if err := metaValidate(schema); err != nil {
		return nil, err
	}
	return &Schema{root: root}, nil
}

func isDraft07(s string) bool {
	s = strings.TrimSuffix(s, "#")
	return s == "http://json-schema.org/draft-07/schema" || s == "https://json-schema.org/draft-07/schema"
}

// metaValidate checks the document against the draft-07 meta-schema.
func metaValidate(schema json.RawMessage) error {
	meta, err := draft07Meta()
	if err != nil {
		return fmt.Errorf("internal error: draft-07 meta-schema: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("invalid JSON Schema: %v", err)
	}
	err = meta.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("invalid JSON Schema: %v", err)
	}
	type leaf struct{ loc, msg string }
	var leaves []leaf
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			if !jsRegexpAfterAll(v, e) {
				leaves = append(leaves, leaf{e.InstanceLocation, e.Message})
			}
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.Slice(leaves, func(i, j int) bool {
		if leaves[i].loc != leaves[j].loc {
			return leaves[i].loc < leaves[j].loc
		}
		return leaves[i].msg < leaves[j].msg
	})
	if len(leaves) == 0 {
		return nil // only JavaScript regular expressions that Go's syntax refuses
	}
	loc := leaves[0].loc
	var msgs []string
	for _, l := range leaves {
		if l.loc == loc {
			msgs = append(msgs, l.msg)
		}
	}
	if loc == "" {
		loc = "/"
	}
	return fmt.Errorf("invalid JSON Schema: at %s: %s", loc, strings.Join(msgs, "; "))
}

// jsRegexpAfterAll reports whether a meta-schema error is a "regex" format failure of a
// pattern that is a valid JavaScript regular expression. The draft-07 meta-schema that
// jsonschema/v5 compiles in checks "pattern" values and "patternProperties" keys with
// Go's syntax; Ajv reads them as JavaScript (see jsregexp.go).
func jsRegexpAfterAll(doc any, e *jsonschema.ValidationError) bool {
	if !strings.HasSuffix(e.KeywordLocation, "/format") || !strings.HasSuffix(e.Message, "is not valid 'regex'") {
		return false
	}
	var toks []string
	for _, t := range strings.Split(strings.TrimPrefix(e.InstanceLocation, "/"), "/") {
		u, err := url.PathUnescape(t)
		if err != nil {
			return false
		}
		toks = append(toks, unescapeToken(u))
	}
	if strings.HasSuffix(e.KeywordLocation, "/propertyNames/format") {
		// A patternProperties key: the last token is the pattern itself.
		return len(toks) > 0 && isJSRegexp(toks[len(toks)-1])
	}
	v := doc
	for _, t := range toks {
		switch cur := v.(type) {
		case map[string]any:
			v = cur[t]
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(cur) {
				return false
			}
			v = cur[i]
		default:
			return false
		}
	}
	s, ok := v.(string)
	return ok && isJSRegexp(s)
}

type compiler struct {
	doc       any
	rootURI   string
	nodes     map[string]*node  // by canonical JSON pointer
	resources map[string]string // absolute URI without fragment -> pointer
	anchors   map[string]string // absolute URI with "#name" fragment -> pointer
}

// subschemaMaps are keywords whose value maps names to schemas.
var subschemaMaps = map[string]bool{
	"properties": true, "patternProperties": true, "definitions": true, "$defs": true, "dependencies": true,
}

// subschemaArrays are keywords whose value is an array of schemas (items may be one).
var subschemaArrays = map[string]bool{"items": true, "allOf": true, "anyOf": true, "oneOf": true}

// notSchemas are keywords whose values are data, never schemas.
var notSchemas = map[string]bool{"enum": true, "const": true, "default": true, "examples": true, "required": true}

// indexIDs records every $id in the document (resources and draft-07 "#name" anchors)
// and returns the root's URI.
func (c *compiler) indexIDs() (string, error) {
	rootURI := rootBase
	if o, ok := c.doc.(*object); ok {
		if id, ok := o.vals["$id"].(string); ok {
			u, err := resolveURI(rootBase, id)
			if err != nil {
				return "", fmt.Errorf("invalid JSON Schema: $id %q: %v", id, err)
			}
			if u.Fragment == "" {
				rootURI = docURI(u)
			}
		}
	}
	c.resources[rootURI] = ""
	var walk func(v any, ptr, base string) error
	walk = func(v any, ptr, base string) error {
		o, ok := v.(*object)
		if !ok {
			return nil
		}
		if id, ok := o.vals["$id"].(string); ok && ptr != "" {
			u, err := resolveURI(base, id)
			if err != nil {
				return fmt.Errorf("invalid JSON Schema: $id %q at %s: %v", id, ptrOrRoot(ptr), err)
			}
			if u.Fragment != "" {
				key := docURI(u) + "#" + u.Fragment
				if prev, dup := c.anchors[key]; dup && prev != ptr {
					return fmt.Errorf("invalid JSON Schema: $id %q is used twice", id)
				}
				c.anchors[key] = ptr
			} else {
				key := docURI(u)
				if prev, dup := c.resources[key]; dup && prev != ptr {
					return fmt.Errorf("invalid JSON Schema: $id %q is used twice", id)
				}
				c.resources[key] = ptr
				base = key
			}
		} else if ptr == "" {
			base = rootURI
			if id, ok := o.vals["$id"].(string); ok {
				if u, err := resolveURI(rootBase, id); err == nil && u.Fragment != "" {
					c.anchors[docURI(u)+"#"+u.Fragment] = ""
				}
			}
		}
		for _, k := range o.keys {
			child := o.vals[k]
			kp := ptr + "/" + escapeToken(k)
			switch {
			case notSchemas[k]:
			case subschemaMaps[k]:
				if m, ok := child.(*object); ok {
					for _, name := range m.keys {
						if err := walk(m.vals[name], kp+"/"+escapeToken(name), base); err != nil {
							return err
						}
					}
				}
			case subschemaArrays[k]:
				if arr, ok := child.([]any); ok {
					for i, item := range arr {
						if err := walk(item, kp+"/"+strconv.Itoa(i), base); err != nil {
							return err
						}
					}
				} else if err := walk(child, kp, base); err != nil {
					return err
				}
			default:
				if err := walk(child, kp, base); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(c.doc, "", rootURI); err != nil {
		return "", err
	}
	return rootURI, nil
}

func resolveURI(base, ref string) (*url.URL, error) {
	b, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	r, err := url.Parse(ref)
	if err != nil {
		return nil, err
	}
	return b.ResolveReference(r), nil
}

func docURI(u *url.URL) string {
	c := *u
	c.Fragment, c.RawFragment = "", ""
	return c.String()
}

func ptrOrRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

func escapeToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func unescapeToken(s string) string {
	if !strings.Contains(s, "~") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// lookup returns the value at a JSON pointer and the base URI in effect there.
func (c *compiler) lookup(ptr string) (any, string, bool) {
	v := c.doc
	base := c.rootURI
	if ptr == "" {
		return v, base, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, "", false
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = unescapeToken(tok)
		switch cur := v.(type) {
		case *object:
			if cur != c.doc {
				if id, ok := cur.vals["$id"].(string); ok {
					if u, err := resolveURI(base, id); err == nil && u.Fragment == "" {
						base = docURI(u)
					}
				}
			}
			nv, ok := cur.vals[tok]
			if !ok {
				return nil, "", false
			}
			v = nv
		case []any:
			i, ok := rawjson.ArrayIndex(tok)
			if !ok || i >= uint64(len(cur)) {
				return nil, "", false
			}
			v = cur[i]
		default:
			return nil, "", false
		}
	}
	if o, ok := v.(*object); ok {
		if id, ok := o.vals["$id"].(string); ok {
			if u, err := resolveURI(base, id); err == nil && u.Fragment == "" {
				base = docURI(u)
			}
		}
	}
	return v, base, true
}

// canonicalPtr re-escapes the tokens of a (possibly oddly escaped) pointer.
func canonicalPtr(p string) string {
	if p == "" {
		return ""
	}
	toks := strings.Split(strings.TrimPrefix(p, "/"), "/")
	var b strings.Builder
	for _, t := range toks {
		b.WriteByte('/')
		b.WriteString(escapeToken(unescapeToken(t)))
	}
	return b.String()
}

func (c *compiler) resolveRef(base, ref, at string) (string, error) {
	u, err := resolveURI(base, ref)
	if err != nil {
		return "", fmt.Errorf("invalid JSON Schema: $ref %q at %s: %v", ref, at, err)
	}
	doc := docURI(u)
	if u.Fragment == "" || strings.HasPrefix(u.Fragment, "/") {
		rp, ok := c.resources[doc]
		if !ok {
			return "", c.unresolvable(u, ref, at)
		}
		target := canonicalPtr(rp + u.Fragment)
		if _, _, ok := c.lookup(target); !ok {
			return "", c.unresolvable(u, ref, at)
		}
		return target, nil
	}
	p, ok := c.anchors[doc+"#"+u.Fragment]
	if !ok {
		return "", c.unresolvable(u, ref, at)
	}
	return p, nil
}

func (c *compiler) unresolvable(u *url.URL, ref, at string) error {
	if u.Scheme == "http" || u.Scheme == "https" {
		return fmt.Errorf("invalid JSON Schema: $ref %q at %s: remote references are not supported", ref, at)
	}
	return fmt.Errorf("invalid JSON Schema: $ref %q at %s cannot be resolved", ref, at)
}

// groupKeywords lists the keywords of each of Ajv's typed rule groups.
var groupKeywords = map[string][]string{
	"number": {"maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum", "multipleOf", "format"},
	"string": {"maxLength", "minLength", "pattern", "format"},
	"array":  {"maxItems", "minItems", "additionalItems", "items", "contains", "uniqueItems"},
	"object": {"maxProperties", "minProperties", "required", "propertyNames", "additionalProperties", "dependencies", "properties", "patternProperties"},
}

// ruleKeywords are the keywords that make a schema non-empty (Ajv's RULES.all, less
// keywords we ignore).
var ruleKeywords = map[string]bool{
	"$ref": true, "type": true, "nullable": true, "const": true, "enum": true,
	"not": true, "anyOf": true, "oneOf": true, "allOf": true, "if": true,
	"maximum": true, "minimum": true, "exclusiveMaximum": true, "exclusiveMinimum": true, "multipleOf": true,
	"maxLength": true, "minLength": true, "pattern": true, "format": true,
	"maxItems": true, "minItems": true, "additionalItems": true, "items": true, "contains": true, "uniqueItems": true,
	"maxProperties": true, "minProperties": true, "required": true, "propertyNames": true,
	"additionalProperties": true, "dependencies": true, "properties": true, "patternProperties": true,
}

var jsonTypes = map[string]bool{"string": true, "number": true, "integer": true, "boolean": true, "null": true, "object": true, "array": true}

func (c *compiler) compile(ptr string) (*node, error) {
	if n, ok := c.nodes[ptr]; ok {
		return n, nil
	}
	v, base, ok := c.lookup(ptr)
	if !ok {
		return nil, fmt.Errorf("invalid JSON Schema: no schema at %s", ptrOrRoot(ptr))
	}
	n := &node{ptr: ptr, maxLength: -1, minLength: -1, maxItems: -1, minItems: -1, maxProps: -1, minProps: -1}
	c.nodes[ptr] = n
	switch s := v.(type) {
	case bool:
		n.always = &s
		return n, nil
	case *object:
		return n, c.fill(n, s, base)
	default:
		return nil, fmt.Errorf("invalid JSON Schema: %s must be an object or boolean", ptrOrRoot(ptr))
	}
}

func (c *compiler) fill(n *node, s *object, base string) error {
	at := ptrOrRoot(n.ptr)
	bad := func(kw, want string) error {
		return fmt.Errorf("invalid JSON Schema: %s/%s must be %s", strings.TrimSuffix(n.ptr, "/"), kw, want)
	}
	sub := func(kw string) (*node, error) {
		return c.compile(n.ptr + "/" + escapeToken(kw))
	}
	subs := func(kw string) ([]*node, error) {
		arr, ok := s.vals[kw].([]any)
		if !ok {
			return nil, bad(kw, "an array of schemas")
		}
		out := make([]*node, len(arr))
		for i := range arr {
			var err error
			if out[i], err = c.compile(n.ptr + "/" + escapeToken(kw) + "/" + strconv.Itoa(i)); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	num := func(kw string) (float64, bool, error) {
		v, ok := s.vals[kw]
		if !ok {
			return 0, false, nil
		}
		f, isNum := v.(float64)
		if !isNum || math.IsInf(f, 0) {
			return 0, false, bad(kw, "a number")
		}
		return f, true, nil
	}
	count := func(kw string) (float64, error) {
		f, ok, err := num(kw)
		if err != nil {
			return -1, err
		}
		if !ok {
			return -1, nil
		}
		if f < 0 || f != math.Trunc(f) {
			return -1, bad(kw, "a non-negative integer")
		}
		return f, nil
	}

	hasRules := false
	for _, k := range s.keys {
		if ruleKeywords[k] {
			hasRules = true
			break
		}
	}
	if !hasRules {
		n.empty = true
		return nil
	}
	var err error

	// type and nullable
	if tv, ok := s.vals["type"]; ok {
		var types []string
		switch t := tv.(type) {
		case string:
			types = []string{t}
			n.typeMsg = "must be " + t
		case []any:
			parts := make([]string, len(t))
			for i, e := range t {
				es, ok := e.(string)
				if !ok {
					return bad("type", "a type name or an array of type names")
				}
				parts[i] = es
			}
			types = parts
			n.typeMsg = "must be " + strings.Join(parts, ",")
		default:
			return bad("type", "a type name or an array of type names")
		}
		for _, t := range types {
			if !jsonTypes[t] {
				return fmt.Errorf("invalid JSON Schema: %s/type: unknown type %q", strings.TrimSuffix(n.ptr, "/"), t)
			}
		}
		if nb, ok := s.vals["nullable"].(bool); ok && nb && len(types) > 0 && !contains(types, "null") {
			types = append(types, "null")
		}
		n.types = types
	}
	for g, kws := range groupKeywords {
		for _, kw := range kws {
			if _, ok := s.vals[kw]; ok {
				switch g {
				case "number":
					n.numberRules = true
				case "string":
					n.stringRules = true
				case "array":
					n.arrayRules = true
				case "object":
					n.objectRules = true
				}
			}
		}
	}
	if len(n.types) > 0 {
		single := ""
		if len(n.types) == 1 {
			single = n.types[0]
		}
		groupHas := map[string]bool{"number": n.numberRules, "string": n.stringRules, "array": n.arrayRules, "object": n.objectRules}
		if single != "" && groupHas[single] {
			n.lateType = single
		} else {
			n.earlyType = true
		}
	}

	if rv, ok := s.vals["$ref"]; ok {
		ref, ok := rv.(string)
		if !ok {
			return bad("$ref", "a string")
		}
		target, err := c.resolveRef(base, ref, at)
		if err != nil {
			return err
		}
		if n.ref, err = c.compile(target); err != nil {
			return err
		}
	}
	if cv, ok := s.vals["const"]; ok {
		n.hasConst, n.constVal = true, cv
	}
	if ev, ok := s.vals["enum"]; ok {
		arr, ok := ev.([]any)
		if !ok {
			return bad("enum", "an array")
		}
		n.hasEnum, n.enum = true, arr
	}
	if _, ok := s.vals["not"]; ok {
		if n.not, err = sub("not"); err != nil {
			return err
		}
	}
	if _, ok := s.vals["anyOf"]; ok {
		if n.anyOf, err = subs("anyOf"); err != nil {
			return err
		}
	}
	if _, ok := s.vals["oneOf"]; ok {
		if n.oneOf, err = subs("oneOf"); err != nil {
			return err
		}
	}
	if _, ok := s.vals["allOf"]; ok {
		if n.allOf, err = subs("allOf"); err != nil {
			return err
		}
	}
	if _, ok := s.vals["if"]; ok {
		_, hasThen := s.vals["then"]
		_, hasElse := s.vals["else"]
		if hasThen || hasElse {
			if n.ifN, err = sub("if"); err != nil {
				return err
			}
			if hasThen {
				if n.thenN, err = sub("then"); err != nil {
					return err
				}
			}
			if hasElse {
				if n.elseN, err = sub("else"); err != nil {
					return err
				}
			}
		}
	}

	// number
	for i, kw := range []string{"maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum"} {
		f, ok, err := num(kw)
		if err != nil {
			return err
		}
		if ok {
			n.limits = append(n.limits, numLimit{kind: i, value: f})
		}
	}
	if f, ok, err := num("multipleOf"); err != nil {
		return err
	} else if ok {
		if f <= 0 {
			return bad("multipleOf", "a number greater than 0")
		}
		n.multipleOf = f
	}

	// string
	if n.maxLength, err = count("maxLength"); err != nil {
		return err
	}
	if n.minLength, err = count("minLength"); err != nil {
		return err
	}
	if pv, ok := s.vals["pattern"]; ok {
		p, ok := pv.(string)
		if !ok {
			return bad("pattern", "a string")
		}
		re, err := compileJSRegexp(p)
		if err != nil {
			return fmt.Errorf("invalid JSON Schema: %s/pattern %q is not a supported regular expression: %v", strings.TrimSuffix(n.ptr, "/"), p, err)
		}
		n.pattern, n.patternSrc = re, p
	}
	if fv, ok := s.vals["format"]; ok {
		f, ok := fv.(string)
		if !ok {
			return bad("format", "a string")
		}
		if fn, known := formatChecker(f); known {
			n.format, n.formatName = fn, f
		}
	}

	// array
	if n.maxItems, err = count("maxItems"); err != nil {
		return err
	}
	if n.minItems, err = count("minItems"); err != nil {
		return err
	}
	if iv, ok := s.vals["items"]; ok {
		if _, isArr := iv.([]any); isArr {
			n.tuple = true
			if n.itemsTuple, err = subs("items"); err != nil {
				return err
			}
			if av, ok := s.vals["additionalItems"]; ok {
				switch a := av.(type) {
				case bool:
					n.addItemsFalse = !a
				case *object:
					if n.addItems, err = sub("additionalItems"); err != nil {
						return err
					}
				default:
					return bad("additionalItems", "a schema")
				}
			}
		} else {
			if n.itemsOne, err = sub("items"); err != nil {
				return err
			}
			if itemsObj, ok := iv.(*object); ok {
				n.uniqueItemTypes = schemaTypes(itemsObj)
			}
		}
	}
	if _, ok := s.vals["contains"]; ok {
		if n.contains, err = sub("contains"); err != nil {
			return err
		}
	}
	if uv, ok := s.vals["uniqueItems"]; ok {
		b, ok := uv.(bool)
		if !ok {
			return bad("uniqueItems", "a boolean")
		}
		n.uniqueItems = b
	}

	// object
	if n.maxProps, err = count("maxProperties"); err != nil {
		return err
	}
	if n.minProps, err = count("minProperties"); err != nil {
		return err
	}
	if rv, ok := s.vals["required"]; ok {
		arr, ok := rv.([]any)
		if !ok {
			return bad("required", "an array of strings")
		}
		for _, e := range arr {
			es, ok := e.(string)
			if !ok {
				return bad("required", "an array of strings")
			}
			n.required = append(n.required, es)
		}
	}
	if _, ok := s.vals["propertyNames"]; ok {
		if n.propertyNames, err = sub("propertyNames"); err != nil {
			return err
		}
	}
	if pv, ok := s.vals["properties"]; ok {
		m, ok := pv.(*object)
		if !ok {
			return bad("properties", "an object")
		}
		n.props = make(map[string]*node, len(m.keys))
		for _, k := range m.keys {
			if k == "__proto__" {
				continue
			}
			pn, err := c.compile(n.ptr + "/properties/" + escapeToken(k))
			if err != nil {
				return err
			}
			n.propOrder = append(n.propOrder, k)
			n.props[k] = pn
		}
	}
	if pv, ok := s.vals["patternProperties"]; ok {
		m, ok := pv.(*object)
		if !ok {
			return bad("patternProperties", "an object")
		}
		for _, k := range m.keys {
			if k == "__proto__" {
				continue
			}
			re, err := compileJSRegexp(k)
			if err != nil {
				return fmt.Errorf("invalid JSON Schema: %s/patternProperties %q is not a supported regular expression: %v", strings.TrimSuffix(n.ptr, "/"), k, err)
			}
			pn, err := c.compile(n.ptr + "/patternProperties/" + escapeToken(k))
			if err != nil {
				return err
			}
			n.patternProps = append(n.patternProps, patternProp{src: k, re: re, node: pn})
		}
	}
	if av, ok := s.vals["additionalProperties"]; ok {
		switch a := av.(type) {
		case bool:
			n.apFalse = !a
		case *object:
			if n.apSchema, err = sub("additionalProperties"); err != nil {
				return err
			}
		default:
			return bad("additionalProperties", "a schema")
		}
	}
	if dv, ok := s.vals["dependencies"]; ok {
		m, ok := dv.(*object)
		if !ok {
			return bad("dependencies", "an object")
		}
		for _, k := range m.keys {
			if k == "__proto__" {
				continue
			}
			switch d := m.vals[k].(type) {
			case []any:
				deps := make([]string, 0, len(d))
				for _, e := range d {
					es, ok := e.(string)
					if !ok {
						return bad("dependencies", "an object of schemas or string arrays")
					}
					deps = append(deps, es)
				}
				if len(deps) > 0 {
					n.propDeps = append(n.propDeps, propDep{prop: k, deps: deps})
				}
			default:
				dn, err := c.compile(n.ptr + "/dependencies/" + escapeToken(k))
				if err != nil {
					return err
				}
				n.schemaDeps = append(n.schemaDeps, schemaDep{prop: k, node: dn})
			}
		}
	}
	return nil
}

// formatChecker returns the check of a format jsonschema/v5 knows, except that a
// "regex" is a JavaScript regular expression (as Ajv reads "pattern"), not an RE2 one.
func formatChecker(name string) (func(any) bool, bool) {
	if name == "regex" {
		return isJSRegexp, true
	}
	fn, ok := jsonschema.Formats[name]
	return fn, ok
}

// schemaTypes is Ajv's getSchemaTypes for the items schema (used by uniqueItems).
func schemaTypes(s *object) []string {
	var types []string
	switch t := s.vals["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			if es, ok := e.(string); ok {
				types = append(types, es)
			}
		}
	}
	if nb, ok := s.vals["nullable"].(bool); ok && nb && len(types) > 0 && !contains(types, "null") {
		types = append(types, "null")
	}
	return types
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// checkLoops rejects schemas that can apply themselves to the same instance forever:
// a cycle made only of keywords that stay on the current instance.
func checkLoops(root *node) error {
	const (
		white = iota
		grey
		black
	)
	color := map[*node]int{}
	var visit func(n *node) error
	var all func(n *node) error
	sameInstance := func(n *node) []*node {
		out := []*node{}
		if n.ref != nil {
			out = append(out, n.ref)
		}
		if n.not != nil {
			out = append(out, n.not)
		}
		out = append(out, n.anyOf...)
		out = append(out, n.oneOf...)
		out = append(out, n.allOf...)
		for _, x := range []*node{n.ifN, n.thenN, n.elseN} {
			if x != nil {
				out = append(out, x)
			}
		}
		for _, d := range n.schemaDeps {
			out = append(out, d.node)
		}
		return out
	}
	visit = func(n *node) error {
		switch color[n] {
		case grey:
			return fmt.Errorf("invalid JSON Schema: %s refers to itself without descending into the instance (infinite recursion)", ptrOrRoot(n.ptr))
		case black:
			return nil
		}
		color[n] = grey
		for _, m := range sameInstance(n) {
			if err := visit(m); err != nil {
				return err
			}
		}
		color[n] = black
		return nil
	}
	// visit every reachable node once as a DFS root
	seen := map[*node]bool{}
	all = func(n *node) error {
		stack := []*node{n}
		for len(stack) > 0 {
			cur := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if seen[cur] {
				continue
			}
			seen[cur] = true
			if err := visit(cur); err != nil {
				return err
			}
			stack = append(stack, children(cur)...)
		}
		return nil
	}
	return all(root)
}

// children lists every node directly referenced by n.
func children(n *node) []*node {
	var out []*node
	add := func(ns ...*node) {
		for _, x := range ns {
			if x != nil {
				out = append(out, x)
			}
		}
	}
	add(n.ref, n.not, n.ifN, n.thenN, n.elseN, n.itemsOne, n.addItems, n.contains, n.propertyNames, n.apSchema)
	add(n.anyOf...)
	add(n.oneOf...)
	add(n.allOf...)
	add(n.itemsTuple...)
	for _, k := range n.propOrder {
		add(n.props[k])
	}
	for _, p := range n.patternProps {
		add(p.node)
	}
	for _, d := range n.schemaDeps {
		add(d.node)
	}
	return out
}
