package schemas

import (
	"encoding/json"
	"strconv"

	"github.com/entityd/entityd/internal/validation"
)

// AllowedKeywords is the Electric Agents keyword allowlist for entity-type schemas.
var AllowedKeywords = map[string]bool{
	"type": true, "properties": true, "required": true, "enum": true, "const": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
	"minLength": true, "maxLength": true, "pattern": true, "items": true, "minItems": true,
	"maxItems": true, "$ref": true, "anyOf": true, "oneOf": true, "allOf": true, "not": true,
	"format": true, "title": true, "description": true, "default": true,
	"additionalProperties": true, "nullable": true, "$schema": true, "$id": true,
	"$defs": true, "definitions": true,
}

// MessageNotASchema is reported when a schema position holds neither an object nor a
// boolean.
const MessageNotASchema = "must be a JSON Schema object"

// MessageTooDeep is reported at base for a schema nested deeper than 512 JSON levels.
const MessageTooDeep = "must not be nested deeper than 512 levels"

// CheckKeywords walks a JSON Schema and reports every keyword outside the allowlist
// (AllowedKeywords). It recurses through properties (each value), $defs and definitions
// (each value), items (a schema or an array of schemas), additionalProperties when it is
// a schema, not, and the members of anyOf/oneOf/allOf. base is the pointer of the schema
// in the request body (e.g. "/inbox_schemas/my_msg"); a detail's path is base plus the
// keyword's pointer inside the schema (e.g. "/inbox_schemas/m/properties/x/patternProperties")
// and its message is `keyword "patternProperties" is not allowed`. A schema position that
// holds neither an object nor a boolean is reported at its own path with
// MessageNotASchema. Within one schema object, keywords are visited in JavaScript key
// order (document order, array-index-like keys first); a disallowed keyword is reported
// when reached and allowed keywords are recursed into at that point, so the details come
// out depth-first in document order. Values of keywords that are not schema containers
// (e.g. "properties": 5) are left to Compile.
func CheckKeywords(schema json.RawMessage, base string) validation.Details {
	doc, err := decodeJSON(schema, maxSchemaDepth)
	if err != nil {
		msg := MessageNotASchema
		if json.Valid(schema) {
			msg = MessageTooDeep
		}
		return validation.Details{{Path: validation.Join(base), Message: msg}}
	}
	var d validation.Details
	checkSchemaKeywords(doc, base, &d)
	return d
}

func checkSchemaKeywords(v any, path string, d *validation.Details) {
	switch s := v.(type) {
	case bool:
		return
	case *object:
		for _, k := range s.keys {
			kp := validation.Join(path, k)
			if !AllowedKeywords[k] {
				d.Add(kp, "keyword "+strconv.Quote(k)+" is not allowed")
				continue
			}
			val := s.vals[k]
			switch k {
			case "properties", "$defs", "definitions":
				if m, ok := val.(*object); ok {
					for _, name := range m.keys {
						checkSchemaKeywords(m.vals[name], validation.Join(kp, name), d)
					}
				}
			case "items":
				if arr, ok := val.([]any); ok {
					for i, item := range arr {
						checkSchemaKeywords(item, validation.Join(kp, i), d)
					}
				} else {
					checkSchemaKeywords(val, kp, d)
				}
			case "additionalProperties":
				if _, ok := val.(*object); ok {
					checkSchemaKeywords(val, kp, d)
				}
			case "not":
				checkSchemaKeywords(val, kp, d)
			case "anyOf", "oneOf", "allOf":
				if arr, ok := val.([]any); ok {
					for i, item := range arr {
						checkSchemaKeywords(item, validation.Join(kp, i), d)
					}
				}
			}
		}
	default:
		d.Add(validation.Join(path), MessageNotASchema)
	}
}
