package slashcmd

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/internal/textpolicy"
	"github.com/entityd/entityd/internal/validation"
	"github.com/entityd/entityd/wire/composer"
)

// Entity-type registration validates slash_commands in two layers, like the reference:
//
//  1. CheckShape: the request-body ("API schema") layer. In the reference this is the
//     route's TypeBox schema compiled with Ajv (allErrors), so its messages are Ajv's and
//     a failure is 400 INVALID_REQUEST.
//  2. ValidateDefinitions: the reference's validateSlashCommandDefinitions (the semantic
//     layer, 422 SCHEMA_VALIDATION_FAILED), followed by entityd's Limits.

// CheckShape checks the JSON shape of a slash_commands value: an array of objects with
// only the keys name (string, required), description (string) and arguments (array);
// each argument an object with only name (string, required), type (one of "string",
// "number", "boolean"), required (boolean) and description (string). raw == nil (the
// field is absent) is valid; JSON null is not an array.
//
// Details use Ajv's messages and paths relative to base, in Ajv's order for each object:
// a missing name ("must have required property 'name'" at the object's path), then each
// unknown key in the object's key order ("must NOT have additional properties" at the
// key's own path, e.g. "/slash_commands/0/extra"), then the known keys in the order
// name, description, arguments / name, type, required, description ("must be string",
// "must be array", "must be boolean", "must be equal to one of the allowed values").
// A non-array is (base, "must be array"), a non-object element (path, "must be object").
func CheckShape(raw json.RawMessage, base string) validation.Details {
	if raw == nil {
		return nil
	}
	var d validation.Details
	items, ok := decodeArray(raw)
	if !ok {
		d.Add(validation.Join(base), "must be array")
		return d
	}
	for i, item := range items {
		checkObjectShape(item, validation.Join(base, i), commandShape, &d)
	}
	return d
}

type fieldKind int

const (
	kindString fieldKind = iota
	kindBoolean
	kindArgType
	kindArguments
)

type shapeField struct {
	name string
	kind fieldKind
}

type shape struct {
	required string
	fields   []shapeField // schema property order
}

var commandShape = shape{required: "name", fields: []shapeField{
	{"name", kindString}, {"description", kindString}, {"arguments", kindArguments},
}}

var argumentShape = shape{required: "name", fields: []shapeField{
	{"name", kindString}, {"type", kindArgType}, {"required", kindBoolean}, {"description", kindString},
}}

func checkObjectShape(raw json.RawMessage, path string, sh shape, d *validation.Details) {
	keys, vals, ok := decodeObject(raw)
	if !ok {
		d.Add(path, "must be object")
		return
	}
	if _, ok := vals[sh.required]; !ok {
		d.Add(path, "must have required property '"+sh.required+"'")
	}
	for _, k := range keys {
		known := false
		for _, f := range sh.fields {
			if f.name == k {
				known = true
				break
			}
		}
		if !known {
			d.Add(validation.Join(path, k), "must NOT have additional properties")
		}
	}
	for _, f := range sh.fields {
		v, ok := vals[f.name]
		if !ok {
			continue
		}
		fp := validation.Join(path, f.name)
		switch f.kind {
		case kindString:
			if jsonKind(v) != '"' {
				d.Add(fp, "must be string")
			}
		case kindBoolean:
			if jsonKind(v) != 'b' {
				d.Add(fp, "must be boolean")
			}
		case kindArgType:
			if !validArgType(v) {
				d.Add(fp, "must be equal to one of the allowed values")
			}
		case kindArguments:
			args, ok := decodeArray(v)
			if !ok {
				d.Add(fp, "must be array")
				continue
			}
			for j, a := range args {
				checkObjectShape(a, validation.Join(fp, j), argumentShape, d)
			}
		}
	}
}

// ValidateDefinitions is the reference's validateSlashCommandDefinitions followed by
// entityd's limits. raw == nil (absent) is valid. Messages and order:
//
//   - not an array: (base, "must be an array"), nothing else;
//   - per entry i (path base/i): not an object "must be an object"; name not a string or
//     not lowercase kebab-case (ValidName): /name "must be a lowercase kebab-case command
//     name"; a valid name already used by an earlier entry: /name "must be unique" (only
//     valid names take part, so two "QuickStart" give two format errors); description
//     present but not a string: /description "must be a string"; arguments present but
//     not an array: /arguments "must be an array"; per argument j (path
//     base/i/arguments/j): not an object "must be an object"; name not a valid argument
//     name (ValidArgumentName): /name "must be a valid argument name"; a valid name
//     already used in this command: /name "must be unique"; type not one of string,
//     number, boolean (including absent): /type "must be string, number, or boolean";
//     required present but not a boolean: /required "must be a boolean"; description
//     present but not a string: /description "must be a string".
//
// Present means the key exists, even with a null value (JavaScript's !== undefined).
// Then the limits, after all of the above: (base, "must contain at most N commands");
// per object entry /name and /description "must be at most N characters" and
// /arguments "must contain at most N arguments"; per object argument /name and
// /description "must be at most N characters". Limits apply to any string (valid or
// not) and count Unicode code points.
func ValidateDefinitions(raw json.RawMessage, base string, limits Limits) validation.Details {
	if raw == nil {
		return nil
	}
	var d validation.Details
	entries, ok := decodeArray(raw)
	if !ok {
		d.Add(validation.Join(base), "must be an array")
		return d
	}
	type parsedArg struct {
		path string
		vals map[string]json.RawMessage
	}
	type parsedCmd struct {
		path string
		vals map[string]json.RawMessage
		args []parsedArg // object arguments only
	}
	var cmds []parsedCmd
	seen := map[string]bool{}
	for i, entry := range entries {
		path := validation.Join(base, i)
		_, vals, ok := decodeObject(entry)
		if !ok {
			d.Add(path, "must be an object")
			continue
		}
		cmd := parsedCmd{path: path, vals: vals}
		if name, ok := stringValue(vals["name"]); !ok || !composer.ValidCommandName(name) {
			d.Add(validation.Join(path, "name"), "must be a lowercase kebab-case command name")
		} else if seen[name] {
			d.Add(validation.Join(path, "name"), "must be unique")
		} else {
			seen[name] = true
		}
		if v, present := vals["description"]; present && jsonKind(v) != '"' {
			d.Add(validation.Join(path, "description"), "must be a string")
		}
		if v, present := vals["arguments"]; present {
			argsPath := validation.Join(path, "arguments")
			args, ok := decodeArray(v)
			if !ok {
				d.Add(argsPath, "must be an array")
			} else {
				argSeen := map[string]bool{}
				for j, a := range args {
					argPath := validation.Join(argsPath, j)
					_, av, ok := decodeObject(a)
					if !ok {
						d.Add(argPath, "must be an object")
						continue
					}
					cmd.args = append(cmd.args, parsedArg{path: argPath, vals: av})
					if name, ok := stringValue(av["name"]); !ok || !composer.ValidArgumentName(name) {
						d.Add(validation.Join(argPath, "name"), "must be a valid argument name")
					} else if argSeen[name] {
						d.Add(validation.Join(argPath, "name"), "must be unique")
					} else {
						argSeen[name] = true
					}
					if !validArgType(av["type"]) {
						d.Add(validation.Join(argPath, "type"), "must be string, number, or boolean")
					}
					if v, present := av["required"]; present && jsonKind(v) != 'b' {
						d.Add(validation.Join(argPath, "required"), "must be a boolean")
					}
					if v, present := av["description"]; present && jsonKind(v) != '"' {
						d.Add(validation.Join(argPath, "description"), "must be a string")
					}
				}
			}
		}
		cmds = append(cmds, cmd)
	}

	// entityd limits. Every string (names, descriptions, hints) is text: descriptions are
	// stored in text columns and shown in pickers, so NUL, lone surrogates and control
	// characters other than tab and newlines are refused (names are stricter already).
	d = append(d, textpolicy.CheckJSON(raw, base, textpolicy.Text)...)
	if limits.MaxCommands > 0 && len(entries) > limits.MaxCommands {
		d.Add(validation.Join(base), "must contain at most "+strconv.Itoa(limits.MaxCommands)+" commands")
	}
	tooLong := func(vals map[string]json.RawMessage, key string, limit int, path string) {
		if limit <= 0 {
			return
		}
		if s, ok := stringValue(vals[key]); ok && utf8.RuneCountInString(s) > limit {
			d.Add(validation.Join(path, key), "must be at most "+strconv.Itoa(limit)+" characters")
		}
	}
	for _, c := range cmds {
		tooLong(c.vals, "name", limits.MaxNameLength, c.path)
		tooLong(c.vals, "description", limits.MaxDescriptionLength, c.path)
		if limits.MaxArguments > 0 {
			if args, ok := decodeArray(c.vals["arguments"]); ok && len(args) > limits.MaxArguments {
				d.Add(validation.Join(c.path, "arguments"), "must contain at most "+strconv.Itoa(limits.MaxArguments)+" arguments")
			}
		}
		for _, a := range c.args {
			tooLong(a.vals, "name", limits.MaxNameLength, a.path)
			tooLong(a.vals, "description", limits.MaxDescriptionLength, a.path)
		}
	}
	return d
}

// Validate checks already-typed definitions (Go code registering commands) with the
// same rules, messages, order and limits as ValidateDefinitions, paths under base.
// A nil slice is valid (absent); an Argument with an empty Type fails the type rule.
func Validate(defs []Definition, base string, limits Limits) validation.Details {
	if defs == nil {
		return nil
	}
	// json.Marshal would turn invalid UTF-8 into U+FFFD silently: refuse it first.
	if d := invalidUTF8(defs, base); d != nil {
		return d
	}
	raw, err := json.Marshal(defs)
	if err != nil { // cannot happen for these types
		return validation.Details{{Path: validation.Join(base), Message: "must be an array"}}
	}
	return ValidateDefinitions(raw, base, limits)
}

// invalidUTF8 reports the strings of Go definitions that are not valid UTF-8.
func invalidUTF8(defs []Definition, base string) validation.Details {
	var d validation.Details
	check := func(s *string, path string) {
		if s != nil && !utf8.ValidString(*s) {
			d.Add(path, textpolicy.ProblemUTF8)
		}
	}
	for i, def := range defs {
		p := validation.Join(base, i)
		check(&def.Name, validation.Join(p, "name"))
		check(def.Description, validation.Join(p, "description"))
		for j, a := range def.Arguments {
			ap := validation.Join(p, "arguments", j)
			check(&a.Name, validation.Join(ap, "name"))
			check(a.Description, validation.Join(ap, "description"))
		}
	}
	return d
}

// ---------------------------------------------------------------------------
// JSON helpers

// jsonKind returns the kind of a JSON value by its first byte: '"' string, 'n' null,
// 'b' boolean, '{' object, '[' array, '0' number; 0 for empty input.
func jsonKind(raw json.RawMessage) byte {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return 0
	}
	switch c := raw[0]; c {
	case '"', 'n', '{', '[':
		return c
	case 't', 'f':
		return 'b'
	default:
		return '0'
	}
}

func stringValue(raw json.RawMessage) (string, bool) {
	if jsonKind(raw) != '"' {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

func validArgType(raw json.RawMessage) bool {
	s, ok := stringValue(raw)
	return ok && (s == ArgString || s == ArgNumber || s == ArgBoolean)
}

func decodeArray(raw json.RawMessage) ([]json.RawMessage, bool) {
	if jsonKind(raw) != '[' {
		return nil, false
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, false
	}
	return items, true
}

// decodeObject returns an object's keys in JavaScript enumeration order (array-index
// keys ascending, then the others in document order; a repeated key keeps its first
// position and its last value, like JSON.parse) and its values.
func decodeObject(raw json.RawMessage) ([]string, map[string]json.RawMessage, bool) {
	if jsonKind(raw) != '{' {
		return nil, nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, nil, false
	}
	var keys []string
	vals := map[string]json.RawMessage{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, nil, false
		}
		k, ok := kt.(string)
		if !ok {
			return nil, nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, false
		}
		if _, dup := vals[k]; !dup {
			keys = append(keys, k)
		}
		vals[k] = v
	}
	return rawjson.JSKeyOrder(keys), vals, true
}
