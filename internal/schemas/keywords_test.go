package schemas

import (
	"reflect"
	"testing"

	"github.com/entityd/entityd/internal/validation"
)

func notAllowed(path, kw string) validation.Detail {
	return validation.Detail{Path: path, Message: `keyword "` + kw + `" is not allowed`}
}

func TestCheckKeywords(t *testing.T) {
	const base = "/inbox_schemas/m"
	tests := []struct {
		name   string
		schema string
		base   string
		want   validation.Details
	}{
		{
			name: "every allowed keyword",
			schema: `{"$schema":"http://json-schema.org/draft-07/schema#","$id":"x","title":"t","description":"d",
				"type":"object","nullable":true,"default":{},"required":["a"],"additionalProperties":false,
				"properties":{"a":{"type":"string","minLength":1,"maxLength":3,"pattern":"^a","format":"email","enum":["a"],"const":"a"},
				"n":{"type":"number","minimum":0,"maximum":1,"exclusiveMinimum":0,"exclusiveMaximum":1},
				"l":{"type":"array","items":{"$ref":"#/$defs/x"},"minItems":1,"maxItems":2}},
				"anyOf":[true],"oneOf":[{}],"allOf":[{}],"not":false,"$defs":{"x":{}},"definitions":{"y":{}}}`,
			base: base,
		},
		{name: "boolean schema", schema: `true`, base: base},
		{
			name:   "top-level keyword",
			schema: `{"type":"object","patternProperties":{"^x":{}}}`,
			base:   base,
			want:   validation.Details{notAllowed(base+"/patternProperties", "patternProperties")},
		},
		{
			name:   "inside properties",
			schema: `{"properties":{"x":{"type":"object","patternProperties":{}}}}`,
			base:   base,
			want:   validation.Details{notAllowed(base+"/properties/x/patternProperties", "patternProperties")},
		},
		{
			name: "nested anyOf members and $defs",
			schema: `{"$defs":{"a":{"anyOf":[{"type":"string"},{"oneOf":[{"if":{}}]}]}},
				"definitions":{"b":{"allOf":[{"uniqueItems":true}]}}}`,
			base: base,
			want: validation.Details{
				notAllowed(base+"/$defs/a/anyOf/1/oneOf/0/if", "if"),
				notAllowed(base+"/definitions/b/allOf/0/uniqueItems", "uniqueItems"),
			},
		},
		{
			name: "items, additionalProperties, not",
			schema: `{"items":{"contains":{}},"additionalProperties":{"minProperties":1},"not":{"multipleOf":2},
				"properties":{"t":{"items":[{"then":{}},true,{"else":{}}]}}}`,
			base: base,
			want: validation.Details{
				notAllowed(base+"/items/contains", "contains"),
				notAllowed(base+"/additionalProperties/minProperties", "minProperties"),
				notAllowed(base+"/not/multipleOf", "multipleOf"),
				notAllowed(base+"/properties/t/items/0/then", "then"),
				notAllowed(base+"/properties/t/items/2/else", "else"),
			},
		},
		{
			name:   "property names are not keywords",
			schema: `{"properties":{"patternProperties":{"type":"string"},"if":true},"$defs":{"then":{}}}`,
			base:   base,
		},
		{
			name:   "document order, several per level",
			schema: `{"b":1,"type":"object","a":{"x":1},"properties":{"p":{"z":1}},"c":2}`,
			base:   base,
			want: validation.Details{
				notAllowed(base+"/b", "b"),
				notAllowed(base+"/a", "a"),
				notAllowed(base+"/properties/p/z", "z"),
				notAllowed(base+"/c", "c"),
			},
		},
		{
			name:   "unknown keyword contents are not walked",
			schema: `{"dependencies":{"a":{"patternProperties":{}}}}`,
			base:   base,
			want:   validation.Details{notAllowed(base+"/dependencies", "dependencies")},
		},
		{
			name:   "pointer escaping",
			schema: `{"properties":{"a/b":{"x~y":1}}}`,
			base:   base,
			want:   validation.Details{notAllowed(base+"/properties/a~1b/x~0y", "x~y")},
		},
		{
			name:   "root base",
			schema: `{"foo":1}`,
			base:   "/",
			want:   validation.Details{notAllowed("/foo", "foo")},
		},
		{
			name:   "not a schema",
			schema: `5`,
			base:   base,
			want:   validation.Details{{Path: base, Message: MessageNotASchema}},
		},
		{
			name:   "array is not a schema",
			schema: `[]`,
			base:   "/",
			want:   validation.Details{{Path: "/", Message: MessageNotASchema}},
		},
		{
			name:   "nested non-schemas",
			schema: `{"properties":{"a":5},"items":[null],"anyOf":["x"],"not":1,"additionalProperties":true,"properties2":0}`,
			base:   base,
			want: validation.Details{
				{Path: base + "/properties/a", Message: MessageNotASchema},
				{Path: base + "/items/0", Message: MessageNotASchema},
				{Path: base + "/anyOf/0", Message: MessageNotASchema},
				{Path: base + "/not", Message: MessageNotASchema},
				notAllowed(base+"/properties2", "properties2"),
			},
		},
		{
			name:   "malformed containers are left to Compile",
			schema: `{"properties":5,"anyOf":{},"$defs":[]}`,
			base:   base,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckKeywords([]byte(tt.schema), tt.base)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("CheckKeywords:\n got  %v\n want %v", got, tt.want)
			}
		})
	}
}
