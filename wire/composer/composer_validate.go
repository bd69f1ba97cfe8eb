package composer

import (
	"bytes"
	"math"
	"strconv"

	"github.com/entityd/entityd/internal/validation"
)

// The reference's messages, copied verbatim: clients and tests match on them.
const (
	msgMustBeObject     = "must be an object"
	msgMustBeString     = "must be a string"
	msgMustBeArray      = "must be an array"
	msgNonEmptyString   = "must be a non-empty string"
	msgMustBeInteger    = "must be an integer"
	msgStartNonNegative = "must be >= 0"
	msgEndAfterStart    = "must be >= start"
	msgEndWithinSource  = "must be within source"
	msgNoOverlap        = "must not overlap the previous node"
	msgRawEqualsSlice   = "must equal source.slice(start, end)"
	msgKebabCommandName = "must be a lowercase kebab-case command name"
)

// composerMaxJSONDepth is encoding/json's nesting cap, so that a body the API layer
// parsed is never "invalid JSON" here; it also bounds the walker's recursion.
const composerMaxJSONDepth = 10000

// MsgInvalidJSON is reported at "/" when the payload bytes are not JSON at all. The
// reference never sees this (its HTTP layer parses first); entityd keeps it distinct
// from "must be an object" so a bug upstream does not look like a client mistake.
const MsgInvalidJSON = "must be valid JSON"

// MaxSourceUnitsMessage is the "/source" message for Limits.MaxSourceUnits; a
// function so the HTTP docs and the validator cannot drift apart.
func MaxSourceUnitsMessage(limit int) string {
	return "must be at most " + strconv.Itoa(limit) + " characters (UTF-16 code units)"
}

// MaxNodesMessage is the "/nodes" message for Limits.MaxNodes.
func MaxNodesMessage(limit int) string {
	return "must contain at most " + strconv.Itoa(limit) + " nodes"
}

// Validate validates the raw JSON bytes of a send payload exactly like the
// reference's validateComposerInputPayload (spec §1.3): same checks, same order, same
// detail paths and messages, errors collected not fail-fast. payload == nil (or empty)
// means the payload was absent (JS undefined): it yields [{"/","must be an object"}].
// Returns nil when valid.
//
// It walks the bytes once to check the syntax and find the fields, then once more over
// the nodes; nothing is decoded into interface{} trees because this runs on every send.
func Validate(payload []byte, limits Limits) validation.Details {
	if len(payload) == 0 {
		return validation.Details{{Path: "/", Message: msgMustBeObject}}
	}
	r := jsonReader{data: payload}
	top := skipWS(payload, 0)
	if top == len(payload) || payload[top] != '{' {
		if !r.finish(r.skipValue(top)) {
			return validation.Details{{Path: "/", Message: MsgInvalidJSON}}
		}
		return validation.Details{{Path: "/", Message: msgMustBeObject}}
	}
	// This pass also checks the syntax of everything, nodes included, so the node pass
	// below runs on bytes known to be JSON.
	source, nodes, end := r.sourceAndNodes(top)
	if !r.finish(end) {
		return validation.Details{{Path: "/", Message: MsgInvalidJSON}}
	}

	var details validation.Details
	sourceIsString := source.is(payload, '"')
	if !sourceIsString {
		details.Add("/source", msgMustBeString)
	} else if limits.MaxSourceUnits > 0 && countUnits(source.content(payload)) > limits.MaxSourceUnits {
		details.Add("/source", MaxSourceUnitsMessage(limits.MaxSourceUnits))
	}
	if nodes.present() {
		switch {
		case !nodes.is(payload, '['):
			details.Add("/nodes", msgMustBeArray)
		case sourceIsString:
			// Inspecting stops after MaxNodes nodes; past the limit their details are dropped.
			if before := len(details); !r.validateNodes(source.content(payload), nodes.start, limits.MaxNodes, &details) {
				details = append(details[:before], validation.Detail{Path: "/nodes", Message: MaxNodesMessage(limits.MaxNodes)})
			}
		case limits.MaxNodes > 0 && r.countElements(nodes.start, limits.MaxNodes+1) > limits.MaxNodes:
			details.Add("/nodes", MaxNodesMessage(limits.MaxNodes))
		}
	}
	if len(details) == 0 {
		return nil
	}
	return details
}

// nodeFields are the node members the validator reads, found in one pass per node.
type nodeFields struct {
	kind, start, end, raw, name, path span
}

// validateNodes is the reference's validateComposerNodes over the array at d[at] == '['.
// It returns false, having stopped early, when there are more than maxNodes (> 0) nodes.
func (r *jsonReader) validateNodes(sourceContent []byte, at, maxNodes int, details *validation.Details) bool {
	d := r.data
	// An ASCII source is compared as bytes. Any other is decoded to UTF-16 once, lazily
	// (nodes without integer spans never need it), into a stack buffer when it fits.
	ascii := plainASCII(sourceContent)
	sourceLen := len(sourceContent)
	var buf [128]uint16
	var source []uint16
	decoded := false

	previousEnd := 0.0
	index := 0
	for el := r.elements(at); el.next(); index++ {
		if index == maxNodes && maxNodes > 0 {
			return false
		}
		if d[el.at] != '{' {
			details.Add(validation.Pointer("nodes", index), msgMustBeObject)
			continue
		}
		var f nodeFields
		it := r.members(el.at)
		for it.next() {
			switch r.word(it.key) {
			case "kind":
				f.kind = it.val
			case "start":
				f.start = it.val
			case "end":
				f.end = it.val
			case "raw":
				f.raw = it.val
			case "name":
				f.name = it.val
			case "path":
				f.path = it.val
			}
		}
		el.done(it.i)

		// Base checks (validateBaseNode).
		if !f.kind.is(d, '"') || f.kind.end-f.kind.start == 2 {
			details.Add(validation.Pointer("nodes", index, "kind"), msgNonEmptyString)
		}
		start, startInt := jsInteger(f.start.bytes(d))
		end, endInt := jsInteger(f.end.bytes(d))
		if !startInt {
			details.Add(validation.Pointer("nodes", index, "start"), msgMustBeInteger)
		}
		if !endInt {
			details.Add(validation.Pointer("nodes", index, "end"), msgMustBeInteger)
		}
		rawIsString := f.raw.is(d, '"')
		if !rawIsString {
			details.Add(validation.Pointer("nodes", index, "raw"), msgMustBeString)
		}
		if startInt && endInt {
			if !ascii && !decoded {
				source = appendUnits(buf[:0], sourceContent)
				sourceLen = len(source)
				decoded = true
			}
			if start < 0 {
				details.Add(validation.Pointer("nodes", index, "start"), msgStartNonNegative)
			}
			if end < start {
				details.Add(validation.Pointer("nodes", index, "end"), msgEndAfterStart)
			}
			if end > float64(sourceLen) {
				details.Add(validation.Pointer("nodes", index, "end"), msgEndWithinSource)
			}
			if start < previousEnd {
				details.Add(validation.Pointer("nodes", index, "start"), msgNoOverlap)
			}
			if rawIsString && !rawMatches(f.raw.content(d), sourceContent, source, ascii, start, end) {
				details.Add(validation.Pointer("nodes", index, "raw"), msgRawEqualsSlice)
			}
			// The watermark ignores overlapping and inverted nodes but not an end past
			// the source, exactly as the reference does.
			if start >= previousEnd && start <= end {
				previousEnd = end
			}
		}

		// Kind-specific checks (validateKnownNodeFields).
		if !f.kind.is(d, '"') {
			continue
		}
		switch r.word(f.kind) {
		case NodeKindSlashCommand:
			if !f.name.is(d, '"') || !validCommandName(f.name.content(d)) {
				details.Add(validation.Pointer("nodes", index, "name"), msgKebabCommandName)
			}
		case NodeKindFile:
			if !nonEmptyString(d, f.path) {
				details.Add(validation.Pointer("nodes", index, "path"), msgMustBeString)
			}
		case NodeKindSymbol, NodeKindBranch:
			if !nonEmptyString(d, f.name) {
				details.Add(validation.Pointer("nodes", index, "name"), msgNonEmptyString)
			}
		}
	}
	return true
}

// rawMatches is raw === source.slice(start, end), with the source either as its ASCII
// token bytes or as decoded units.
func rawMatches(raw, asciiSource []byte, source []uint16, ascii bool, start, end float64) bool {
	if ascii {
		from, to := jsSliceBounds(len(asciiSource), start, end)
		want := asciiSource[from:to]
		return bytes.Equal(raw, want) || equalUnits(raw, want)
	}
	from, to := jsSliceBounds(len(source), start, end)
	return equalUnits(raw, source[from:to])
}

// validCommandName applies the shared kebab grammar to the decoded name (a client may
// legally escape any character, e.g. "pr\u002dreview").
func validCommandName(content []byte) bool {
	if plainASCII(content) {
		return ValidCommandName(string(content))
	}
	return ValidCommandName(decodeString(content))
}

// nonEmptyString is typeof v === "string" && v.length > 0. Any token longer than its two
// quotes decodes to at least one unit.
func nonEmptyString(d []byte, s span) bool {
	return s.is(d, '"') && s.end-s.start > 2
}

// jsInteger is Number.isInteger on a JSON token: only numbers qualify (never "3"), any
// finite integral value does (5.0, 1e2, -0, 1e300), and the value is returned as float64
// because it may not fit an int. An absent token (nil) is not an integer.
func jsInteger(tok []byte) (float64, bool) {
	if len(tok) == 0 || (tok[0] != '-' && (tok[0] < '0' || tok[0] > '9')) {
		return 0, false
	}
	// Fast path for the usual small non-negative integer.
	if len(tok) <= 15 {
		v := 0
		for _, c := range tok {
			if c < '0' || c > '9' {
				v = -1
				break
			}
			v = v*10 + int(c-'0')
		}
		if v >= 0 {
			return float64(v), true
		}
	}
	// The scanner accepted the token, so the only possible error is a range error, and
	// then f is what JS gets too: ±Inf on overflow (not an integer), 0 on underflow (one).
	f, _ := strconv.ParseFloat(string(tok), 64)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, f == math.Trunc(f)
}

// ---------------------------------------------------------------------------------------
// A small validating JSON walker. It only finds where values are; the validator needs
// the raw tokens anyway (numbers as written, strings with their escapes), so building
// maps or interface{} trees would be wasted work on the send path.

// span is where a value sits in the payload; the zero span means "absent" (no value can
// end at offset 0).
type span struct{ start, end int }

func (s span) present() bool { return s.end > 0 }

// is reports whether the value is present and starts with c: '"' string, '[' array...
func (s span) is(d []byte, c byte) bool { return s.end > 0 && d[s.start] == c }

// bytes is the token, nil when absent.
func (s span) bytes(d []byte) []byte {
	if s.end == 0 {
		return nil
	}
	return d[s.start:s.end]
}

// content is a string token without its quotes.
func (s span) content(d []byte) []byte { return d[s.start+1 : s.end-1] }

// jsonReader walks a payload and remembers whether it ever saw invalid syntax; once bad,
// every step returns at once and offsets stop meaning anything.
// sourceAndNodes finds the payload's "source" and "nodes" members in the object at top
// (the last one wins, as in JSON.parse) and returns where the object ends.
func (r *jsonReader) sourceAndNodes(top int) (source, nodes span, end int) {
	it := r.members(top)
	for it.next() {
		switch r.word(it.key) {
		case "source":
			source = it.val
		case "nodes":
			nodes = it.val
		}
	}
	return source, nodes, it.i
}

type jsonReader struct {
	data  []byte
	depth int
	bad   bool
}

func (r *jsonReader) fail() int {
	r.bad = true
	return len(r.data)
}

// finish reports whether the payload was valid and nothing but whitespace follows end.
func (r *jsonReader) finish(end int) bool {
	return !r.bad && skipWS(r.data, end) == len(r.data)
}

func skipWS(d []byte, i int) int {
	for ; i < len(d); i++ {
		switch d[i] {
		case ' ', '\t', '\n', '\r':
		default:
			return i
		}
	}
	return i
}

// word returns the string token's value when it is one of the few keys and kinds the
// validator looks at, else "". It returns constants, so it allocates nothing.
func (r *jsonReader) word(s span) string {
	c := s.content(r.data)
	if bytes.IndexByte(c, '\\') >= 0 {
		c = []byte(decodeString(c))
	}
	switch string(c) {
	case "source":
		return "source"
	case "nodes":
		return "nodes"
	case "kind":
		return "kind"
	case "start":
		return "start"
	case "end":
		return "end"
	case "raw":
		return "raw"
	case "name":
		return "name"
	case "path":
		return "path"
	case NodeKindText:
		return NodeKindText
	case NodeKindSlashCommand:
		return NodeKindSlashCommand
	case NodeKindFile:
		return NodeKindFile
	case NodeKindSymbol:
		return NodeKindSymbol
	case NodeKindBranch:
		return NodeKindBranch
	}
	return ""
}

// skipValue checks the value starting at i and returns the offset just after it.
func (r *jsonReader) skipValue(i int) int {
	d := r.data
	if r.bad || i >= len(d) {
		return r.fail()
	}
	switch c := d[i]; {
	case c == '"':
		return r.skipString(i)
	case c == '{':
		it := r.members(i)
		for it.next() {
		}
		return it.i
	case c == '[':
		it := r.elements(i)
		for it.next() {
		}
		return it.i
	case c == 't':
		return r.literal(i, "true")
	case c == 'f':
		return r.literal(i, "false")
	case c == 'n':
		return r.literal(i, "null")
	case c == '-' || isDigit(c):
		return r.skipNumber(i)
	}
	return r.fail()
}

func (r *jsonReader) literal(i int, lit string) int {
	if len(r.data)-i < len(lit) || string(r.data[i:i+len(lit)]) != lit {
		return r.fail()
	}
	return i + len(lit)
}

// plainByte marks the bytes a string may hold without a closer look: everything but the
// quote, the backslash and control characters. Strings are most of a payload's bytes.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func (r *jsonReader) skipString(i int) int {
	d := r.data
	for j := i + 1; j < len(d); j++ {
		if plainByte[d[j]] {
			continue
		}
		switch d[j] {
		case '"':
			return j + 1
		case '\\':
			j++
			if j >= len(d) {
				return r.fail()
			}
			switch d[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(d) {
					return r.fail()
				}
				for k := j + 1; k <= j+4; k++ {
					if !isHex(d[k]) {
						return r.fail()
					}
				}
				j += 4
			default:
				return r.fail()
			}
		default: // a control character
			return r.fail()
		}
	}
	return r.fail()
}

func (r *jsonReader) skipNumber(i int) int {
	d := r.data
	j := i
	if d[j] == '-' {
		j++
	}
	switch {
	case j < len(d) && d[j] == '0':
		j++
	case j < len(d) && isDigit(d[j]):
		j = skipDigits(d, j)
	default:
		return r.fail()
	}
	if j < len(d) && d[j] == '.' {
		j++
		if j >= len(d) || !isDigit(d[j]) {
			return r.fail()
		}
		j = skipDigits(d, j)
	}
	if j < len(d) && (d[j] == 'e' || d[j] == 'E') {
		j++
		if j < len(d) && (d[j] == '+' || d[j] == '-') {
			j++
		}
		if j >= len(d) || !isDigit(d[j]) {
			return r.fail()
		}
		j = skipDigits(d, j)
	}
	return j
}

func skipDigits(d []byte, j int) int {
	for j < len(d) && isDigit(d[j]) {
		j++
	}
	return j
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// enter counts one more level of nesting; deeper than encoding/json allows is invalid,
// which also keeps the recursion in skipValue bounded.
func (r *jsonReader) enter() {
	r.depth++
	if r.depth > composerMaxJSONDepth {
		r.fail()
	}
}

// listIter is what walking an object and walking an array share: the position and
// the separators between items.
type listIter struct {
	r       *jsonReader
	i       int // next byte to look at; just past the closing bracket once done
	started bool
}

// open consumes what comes before the next item: the closing bracket (then the walk
// is over) or, after the first item, a comma. It leaves i at the item.
func (l *listIter) open(closing byte) bool {
	r, d := l.r, l.r.data
	i := skipWS(d, l.i)
	switch {
	case r.bad:
		return false
	case i >= len(d):
		r.fail()
		return false
	case d[i] == closing: // "{}", "[]" or after an item; "[1,]" fails on the item
		l.i = i + 1
		r.depth--
		return false
	case !l.started:
		l.started = true
		l.i = i
		return true
	case d[i] == ',':
		l.i = skipWS(d, i+1)
		return true
	}
	r.fail()
	return false
}

// memberIter walks the members of the object whose '{' is at the offset given to
// members, checking each value.
type memberIter struct {
	listIter
	key, val span
}

func (r *jsonReader) members(at int) memberIter {
	r.enter()
	return memberIter{listIter: listIter{r: r, i: at + 1}}
}

func (it *memberIter) next() bool {
	if !it.open('}') {
		return false
	}
	r, d, i := it.r, it.r.data, it.i
	if i >= len(d) || d[i] != '"' {
		r.fail()
		return false
	}
	keyEnd := r.skipString(i)
	it.key = span{i, keyEnd}
	i = skipWS(d, keyEnd)
	if i >= len(d) || d[i] != ':' {
		r.fail()
		return false
	}
	i = skipWS(d, i+1)
	end := r.skipValue(i)
	if r.bad {
		return false
	}
	it.val = span{i, end}
	it.i = end
	return true
}

// elementIter walks the elements of the array whose '[' is at the offset given to
// elements; at is where the current element starts. A caller that walks an element
// itself (a node object) reports where it ended with done, so no element is read twice;
// otherwise next skips (and checks) it.
type elementIter struct {
	listIter
	at      int
	pending bool // the current element has not been skipped yet
}

func (r *jsonReader) elements(at int) elementIter {
	r.enter()
	return elementIter{listIter: listIter{r: r, i: at + 1}}
}

func (it *elementIter) next() bool {
	if it.pending {
		it.done(it.r.skipValue(it.at))
	}
	if !it.open(']') {
		return false
	}
	it.at = it.i
	it.pending = true
	return true
}

// done records that the current element ends at end.
func (it *elementIter) done(end int) {
	it.i = end
	it.pending = false
}

// countElements counts the elements of the (already checked) array at d[at], stopping
// once it reaches stop, so a huge array over the limit costs no more than the limit.
func (r *jsonReader) countElements(at, stop int) int {
	depth := r.depth
	n := 0
	for el := r.elements(at); n < stop && el.next(); {
		n++
	}
	r.depth = depth
	return n
}
