package schemas

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/entityd/entityd/internal/validation"
)

// Messages that are not Ajv's.
const (
	// MessageInvalidJSON is reported at "/" when the instance is not JSON.
	MessageInvalidJSON = "must be valid JSON"
	// MessageTooComplex is reported at "/" when validation exceeds its work budget.
	MessageTooComplex = "is too complex to validate against this schema"
)

// maxSteps bounds the work of one Validate call (schema applications, array/object
// members visited, uniqueItems comparisons, bytes matched by regexes/formats / 256).
const maxSteps = 2_000_000

// Validate validates a JSON instance and returns Ajv-style details in Ajv's order (see
// the package documentation), or nil when the instance is valid.
func (s *Schema) Validate(instance []byte) validation.Details {
	inst, err := decodeJSON(instance, maxDepth)
	if err != nil {
		return validation.Details{{Path: "/", Message: MessageInvalidJSON}}
	}
	v := &validator{}
	ok := v.validate(s.root, inst, nil)
	if v.aborted {
		return validation.Details{{Path: "/", Message: MessageTooComplex}}
	}
	if ok {
		return nil
	}
	if len(v.errs) == 0 { // cannot happen: every failure reports something
		return validation.Details{{Path: "/", Message: "must be valid"}}
	}
	return v.errs
}

type validator struct {
	errs    validation.Details
	steps   int
	aborted bool
}

func (v *validator) spend(n int) bool {
	v.steps += n
	if v.steps > maxSteps {
		v.aborted = true
	}
	return v.aborted
}

func (v *validator) add(path *segment, msg string) {
	var segs []any
	for p := path; p != nil; p = p.parent {
		segs = append(segs, p.seg)
	}
	for i, j := 0, len(segs)-1; i < j; i, j = i+1, j-1 {
		segs[i], segs[j] = segs[j], segs[i]
	}
	v.spend(len(segs) / 16)
	v.errs = append(v.errs, validation.Detail{Path: validation.Pointer(segs...), Message: msg})
}

func (v *validator) reset(n int) { v.errs = v.errs[:n] }

// segment is one step of an instance path, linked to its parent so that descending
// costs O(1); the JSON pointer is only built when an error is reported.
type segment struct {
	parent *segment
	seg    any // string or int
}

func child(path *segment, seg any) *segment { return &segment{parent: path, seg: seg} }

func isNumber(x any) (float64, bool) {
	f, ok := x.(float64)
	if !ok || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

func hasType(t string, x any) bool {
	switch t {
	case "null":
		return x == nil
	case "boolean":
		_, ok := x.(bool)
		return ok
	case "string":
		_, ok := x.(string)
		return ok
	case "number":
		_, ok := isNumber(x)
		return ok
	case "integer":
		f, ok := isNumber(x)
		return ok && f == math.Trunc(f)
	case "array":
		_, ok := x.([]any)
		return ok
	case "object":
		_, ok := x.(*object)
		return ok
	}
	return false
}

func hasAnyType(types []string, x any) bool {
	for _, t := range types {
		if hasType(t, x) {
			return true
		}
	}
	return false
}

// validate applies n to x at path and reports whether x is valid. Errors are appended
// to v.errs (callers that must not leak them truncate afterwards).
func (v *validator) validate(n *node, x any, path *segment) bool {
	if v.spend(1) {
		return true
	}
	if n.always != nil {
		if !*n.always {
			v.add(path, "boolean schema is false")
			return false
		}
		return true
	}
	if n.empty {
		return true
	}
	valid := true
	fail := func(msg string) {
		v.add(path, msg)
		valid = false
	}

	if n.earlyType && !hasAnyType(n.types, x) {
		fail(n.typeMsg)
	}
	if n.ref != nil && !v.validate(n.ref, x, path) {
		valid = false
	}
	if n.hasConst && !deepEqual(x, n.constVal) {
		fail("must be equal to constant")
	}
	if n.hasEnum {
		found := false
		for _, e := range n.enum {
			if deepEqual(x, e) {
				found = true
				break
			}
		}
		if !found {
			fail("must be equal to one of the allowed values")
		}
	}
	if n.not != nil {
		before := len(v.errs)
		ok := v.validate(n.not, x, path)
		v.reset(before)
		if ok {
			fail("must NOT be valid")
		}
	}
	if len(n.anyOf) > 0 {
		before := len(v.errs)
		ok := false
		for _, s := range n.anyOf {
			if v.validate(s, x, path) {
				ok = true
				break
			}
		}
		if ok {
			v.reset(before)
		} else {
			fail("must match a schema in anyOf")
		}
	}
	if len(n.oneOf) > 0 {
		before := len(v.errs)
		passing := 0
		for _, s := range n.oneOf {
			if v.validate(s, x, path) {
				passing++
				if passing == 2 {
					break // Ajv stops at the second passing branch: later ones report nothing
				}
			}
		}
		if passing == 1 {
			v.reset(before)
		} else {
			fail("must match exactly one schema in oneOf")
		}
	}
	for _, s := range n.allOf {
		if !v.validate(s, x, path) {
			valid = false
		}
	}
	if n.ifN != nil {
		before := len(v.errs)
		ok := v.validate(n.ifN, x, path)
		v.reset(before)
		if ok && n.thenN != nil && !v.validate(n.thenN, x, path) {
			fail(`must match "then" schema`)
		} else if !ok && n.elseN != nil && !v.validate(n.elseN, x, path) {
			fail(`must match "else" schema`)
		}
	}

	if n.numberRules || n.lateType == "number" {
		if f, ok := isNumber(x); ok {
			if !v.numberKeywords(n, f, path) {
				valid = false
			}
		} else if n.lateType == "number" {
			fail(n.typeMsg)
		}
	}
	if n.stringRules || n.lateType == "string" {
		if s, ok := x.(string); ok {
			if !v.stringKeywords(n, s, path) {
				valid = false
			}
		} else if n.lateType == "string" {
			fail(n.typeMsg)
		}
	}
	if n.arrayRules || n.lateType == "array" {
		if a, ok := x.([]any); ok {
			if !v.arrayKeywords(n, a, path) {
				valid = false
			}
		} else if n.lateType == "array" {
			fail(n.typeMsg)
		}
	}
	if n.objectRules || n.lateType == "object" {
		if o, ok := x.(*object); ok {
			if !v.objectKeywords(n, o, path) {
				valid = false
			}
		} else if n.lateType == "object" {
			fail(n.typeMsg)
		}
	}
	return valid
}

var limitOps = [...]string{limMaximum: "<=", limMinimum: ">=", limExclusiveMaximum: "<", limExclusiveMinimum: ">"}

func (v *validator) numberKeywords(n *node, f float64, path *segment) bool {
	valid := true
	for _, l := range n.limits {
		var ok bool
		switch l.kind {
		case limMaximum:
			ok = f <= l.value
		case limMinimum:
			ok = f >= l.value
		case limExclusiveMaximum:
			ok = f < l.value
		case limExclusiveMinimum:
			ok = f > l.value
		}
		if !ok {
			v.add(path, "must be "+limitOps[l.kind]+" "+jsNumber(l.value))
			valid = false
		}
	}
	if n.multipleOf > 0 {
		// Ajv's test is q !== parseInt(q), and parseInt reads String(q): from 1e21 on
		// that is exponent notation ("1e+21" reads 1), so such quotients never pass.
		q := f / n.multipleOf
		if q != math.Trunc(q) || math.IsInf(q, 0) || math.Abs(q) >= 1e21 {
			v.add(path, "must be multiple of "+jsNumber(n.multipleOf))
			valid = false
		}
	}
	return valid
}

func (v *validator) stringKeywords(n *node, s string, path *segment) bool {
	valid := true
	if n.maxLength >= 0 || n.minLength >= 0 {
		l := float64(utf8.RuneCountInString(s))
		if n.maxLength >= 0 && l > n.maxLength {
			v.add(path, "must NOT have more than "+jsNumber(n.maxLength)+" characters")
			valid = false
		}
		if n.minLength >= 0 && l < n.minLength {
			v.add(path, "must NOT have fewer than "+jsNumber(n.minLength)+" characters")
			valid = false
		}
	}
	if n.pattern != nil {
		if v.spend(len(s) / 256) {
			return true
		}
		if !n.pattern.MatchString(s) {
			v.add(path, `must match pattern "`+n.patternSrc+`"`)
			valid = false
		}
	}
	if n.format != nil {
		if v.spend(len(s) / 256) {
			return true
		}
		if !n.format(s) {
			v.add(path, `must match format "`+n.formatName+`"`)
			valid = false
		}
	}
	return valid
}

func (v *validator) arrayKeywords(n *node, a []any, path *segment) bool {
	valid := true
	l := float64(len(a))
	if n.maxItems >= 0 && l > n.maxItems {
		v.add(path, "must NOT have more than "+jsNumber(n.maxItems)+" items")
		valid = false
	}
	if n.minItems >= 0 && l < n.minItems {
		v.add(path, "must NOT have fewer than "+jsNumber(n.minItems)+" items")
		valid = false
	}
	if n.tuple {
		k := len(n.itemsTuple)
		if len(a) > k {
			if n.addItemsFalse {
				v.add(path, "must NOT have more than "+strconv.Itoa(k)+" items")
				valid = false
			} else if n.addItems != nil {
				for i := k; i < len(a); i++ {
					if !v.validate(n.addItems, a[i], child(path, i)) {
						valid = false
					}
				}
			}
		}
		for i, s := range n.itemsTuple {
			if i >= len(a) {
				break
			}
			if !v.validate(s, a[i], child(path, i)) {
				valid = false
			}
		}
	} else if n.itemsOne != nil {
		for i, e := range a {
			if !v.validate(n.itemsOne, e, child(path, i)) {
				valid = false
			}
		}
	}
	if n.contains != nil {
		before := len(v.errs)
		found := false
		for i, e := range a {
			if v.validate(n.contains, e, child(path, i)) {
				found = true
				break
			}
		}
		if found {
			v.reset(before)
		} else {
			v.add(path, "must contain at least 1 valid item(s)")
			valid = false
		}
	}
	if n.uniqueItems && len(a) > 1 {
		if i, j, dup := v.duplicate(n, a); dup {
			v.add(path, "must NOT have duplicate items (items ## "+strconv.Itoa(j)+" and "+strconv.Itoa(i)+" are identical)")
			valid = false
		}
	}
	return valid
}

// duplicate finds the duplicate Ajv reports, with Ajv's two loops: when the items
// schema declares only scalar types, a hash over items of those types scanning from the
// end (j > i); otherwise a pairwise deep comparison scanning from the end (j < i).
func (v *validator) duplicate(n *node, a []any) (i, j int, found bool) {
	scalar := len(n.uniqueItemTypes) > 0
	for _, t := range n.uniqueItemTypes {
		if t == "object" || t == "array" {
			scalar = false
		}
	}
	if scalar {
		indices := map[string]int{}
		for i := len(a) - 1; i >= 0; i-- {
			if v.spend(1) {
				return 0, 0, false
			}
			item := a[i]
			if !hasAnyType(n.uniqueItemTypes, item) {
				continue
			}
			key := jsString(item)
			if len(n.uniqueItemTypes) > 1 {
				if _, isStr := item.(string); isStr {
					key += "_"
				}
			}
			if j, ok := indices[key]; ok {
				return i, j, true
			}
			indices[key] = i
		}
		return 0, 0, false
	}
	for i := len(a) - 1; i > 0; i-- {
		for j := i - 1; j >= 0; j-- {
			if v.spend(1) {
				return 0, 0, false
			}
			if deepEqual(a[i], a[j]) {
				return i, j, true
			}
		}
	}
	return 0, 0, false
}

func (v *validator) objectKeywords(n *node, o *object, path *segment) bool {
	valid := true
	fail := func(msg string) {
		v.add(path, msg)
		valid = false
	}
	count := float64(len(o.keys))
	if n.maxProps >= 0 && count > n.maxProps {
		fail("must NOT have more than " + jsNumber(n.maxProps) + " properties")
	}
	if n.minProps >= 0 && count < n.minProps {
		fail("must NOT have fewer than " + jsNumber(n.minProps) + " properties")
	}
	for _, r := range n.required {
		if _, ok := o.vals[r]; !ok {
			fail("must have required property '" + r + "'")
		}
	}
	if n.propertyNames != nil {
		for _, k := range o.keys {
			if !v.validate(n.propertyNames, k, path) {
				fail("property name must be valid")
			}
		}
	}
	if n.apFalse || n.apSchema != nil {
		for _, k := range o.keys {
			if v.spend(1) {
				return true
			}
			if _, declared := n.props[k]; declared {
				continue
			}
			matched := false
			for _, p := range n.patternProps {
				if p.re.MatchString(k) {
					matched = true
					break
				}
			}
			if matched {
				continue
			}
			if n.apFalse {
				fail("must NOT have additional properties")
			} else if !v.validate(n.apSchema, o.vals[k], child(path, k)) {
				valid = false
			}
		}
	}
	for _, d := range n.propDeps {
		if _, ok := o.vals[d.prop]; !ok {
			continue
		}
		for _, dep := range d.deps {
			if _, ok := o.vals[dep]; !ok {
				word := "properties"
				if len(d.deps) == 1 {
					word = "property"
				}
				fail("must have " + word + " " + strings.Join(d.deps, ", ") + " when property " + d.prop + " is present")
			}
		}
	}
	for _, d := range n.schemaDeps {
		if _, ok := o.vals[d.prop]; ok && !v.validate(d.node, o, path) {
			valid = false
		}
	}
	for _, k := range n.propOrder {
		if val, ok := o.vals[k]; ok && !v.validate(n.props[k], val, child(path, k)) {
			valid = false
		}
	}
	for _, p := range n.patternProps {
		for _, k := range o.keys {
			if v.spend(1) {
				return true
			}
			if p.re.MatchString(k) && !v.validate(p.node, o.vals[k], child(path, k)) {
				valid = false
			}
		}
	}
	return valid
}

// deepEqual is fast-deep-equal on decoded JSON values.
func deepEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !deepEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case *object:
		y, ok := b.(*object)
		if !ok || len(x.keys) != len(y.keys) {
			return false
		}
		for _, k := range x.keys {
			yv, ok := y.vals[k]
			if !ok || !deepEqual(x.vals[k], yv) {
				return false
			}
		}
		return true
	}
	return false
}

// jsString is String(x) in JavaScript for the scalar values uniqueItems hashes.
func jsString(x any) string {
	switch t := x.(type) {
	case nil:
		return "null"
	case bool:
		if t {
			return "true"
		}
		return "false"
	case float64:
		return jsNumber(t)
	case string:
		return t
	}
	return ""
}

// jsNumber formats f like JavaScript's Number.prototype.toString.
func jsNumber(f float64) string {
	switch {
	case f == 0:
		return "0"
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	abs := math.Abs(f)
	if abs >= 1e21 || abs < 1e-6 {
		s := strconv.FormatFloat(f, 'e', -1, 64) // e.g. 1e+21, 1.5e-07
		mant, exp, _ := strings.Cut(s, "e")
		sign := exp[0]
		digits := strings.TrimLeft(exp[1:], "0")
		return mant + "e" + string(sign) + digits
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}
