package shapes

import "encoding/json"

// table is a relation a shape may be taken of.
type table struct {
	name    string   // the table parameter, and shape_log.relation
	key     string   // the primary-key column
	columns []string // every column a shape shows, in order
	types   map[string]string
	rows    string // the query for a snapshot page (rows after a key)
	// filters are the columns whose equality conditions the snapshot query applies
	// itself (the rows view's column, stored as the shape shows it), so that an index
	// finds the rows; the where is still checked on every row served.
	filters map[string]string
}

// column types as Electric names them (the client parses values by them)
var tables = map[string]*table{
	"entities": {
		name: "entities", key: "url",
		columns: []string{"url", "type", "status", "tags", "spawn_args", "parent", "created_by",
			"type_revision", "created_at", "updated_at"},
		types: map[string]string{"url": "text", "type": "text", "status": "text", "tags": "jsonb",
			"spawn_args": "json", "parent": "text", "created_by": "text", "type_revision": "int4",
			"created_at": "int8", "updated_at": "int8"},
		rows:    sqlEntityRows,
		filters: map[string]string{"url": "key", "type": "type", "status": "status"},
	},
	"entity_types": {
		name: "entity_types", key: "name",
		columns: []string{"name", "description", "creation_schema", "inbox_schemas", "state_schemas",
			"slash_commands", "serve_endpoint", "default_dispatch_policy", "revision", "created_at", "updated_at"},
		types: map[string]string{"name": "text", "description": "text", "creation_schema": "json",
			"inbox_schemas": "json", "state_schemas": "json", "slash_commands": "json", "serve_endpoint": "text",
			"default_dispatch_policy": "json", "revision": "int4", "created_at": "text", "updated_at": "text"},
		rows:    sqlEntityTypeRows,
		filters: map[string]string{"name": "key"},
	},
}

// schemaHeader is the electric-schema header for the selected columns.
func (t *table) schemaHeader(cols []string) string {
	out := make(map[string]map[string]any, len(cols))
	for _, c := range cols {
		info := map[string]any{"type": t.types[c]}
		if c == t.key {
			info["pk_index"] = 0
			info["not_null"] = true
		}
		out[c] = info
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// keyOf is a row's key as Electric writes it: "public"."<table>"/"<pk>".
func (t *table) keyOf(pk string) string {
	return `"public"."` + t.name + `"/"` + escapeKey(pk) + `"`
}

func escapeKey(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}
