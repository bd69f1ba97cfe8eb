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
		columns: []string{"url", "type", "status", "tags", "spawn_args", "sandbox", "dispatch_policy", "parent",
			"created_by", "type_revision", "inbox_schemas", "state_schemas", "created_at", "updated_at"},
		types: map[string]string{"url": "text", "type": "text", "status": "text", "tags": "jsonb",
			"spawn_args": "jsonb", "sandbox": "jsonb", "dispatch_policy": "jsonb", "parent": "text",
			"created_by": "text", "type_revision": "int4", "inbox_schemas": "jsonb", "state_schemas": "jsonb",
			"created_at": "int8", "updated_at": "int8"},
		rows:    sqlEntityRows,
		filters: map[string]string{"url": "key", "type": "type", "status": "status"},
	},
	"entity_types": {
		name: "entity_types", key: "name",
		columns: []string{"name", "description", "creation_schema", "inbox_schemas", "state_schemas",
			"slash_commands", "externally_writable_collections", "serve_endpoint", "default_dispatch_policy",
			"revision", "created_at", "updated_at"},
		types: map[string]string{"name": "text", "description": "text", "creation_schema": "json",
			"inbox_schemas": "json", "state_schemas": "json", "slash_commands": "json",
			"externally_writable_collections": "json", "serve_endpoint": "text",
			"default_dispatch_policy": "json", "revision": "int4", "created_at": "text", "updated_at": "text"},
		rows:    sqlEntityTypeRows,
		filters: map[string]string{"name": "key"},
	},
	// The tables below are the rest of what Electric's web UI reads, with the
	// reference's columns; each is scoped to the caller (Options.Scope).
	"runners": {
		name: "runners", key: "id",
		columns: []string{"id", "owner_principal", "label", "kind", "admin_status", "wake_stream",
			"sandbox_profiles", "created_at", "updated_at"},
		types: map[string]string{"id": "text", "owner_principal": "text", "label": "text", "kind": "text",
			"admin_status": "text", "wake_stream": "text", "sandbox_profiles": "jsonb",
			"created_at": "timestamptz", "updated_at": "timestamptz"},
		rows:    sqlRunnerRows,
		filters: map[string]string{"id": "key"},
	},
	"runner_runtime_diagnostics": {
		name: "runner_runtime_diagnostics", key: "runner_id",
		columns: []string{"runner_id", "owner_principal", "wake_stream_offset", "last_seen_at",
			"liveness_lease_expires_at", "diagnostics", "updated_at"},
		types: map[string]string{"runner_id": "text", "owner_principal": "text", "wake_stream_offset": "text",
			"last_seen_at": "timestamptz", "liveness_lease_expires_at": "timestamptz", "diagnostics": "jsonb",
			"updated_at": "timestamptz"},
		rows:    sqlRunnerDiagnosticsRows,
		filters: map[string]string{"runner_id": "key"},
	},
	"users": {
		name: "users", key: "id",
		columns: []string{"id", "display_name", "email", "avatar_url", "created_at", "updated_at"},
		types: map[string]string{"id": "text", "display_name": "text", "email": "text", "avatar_url": "text",
			"created_at": "timestamptz", "updated_at": "timestamptz"},
		rows:    sqlUserRows,
		filters: map[string]string{"id": "key"},
	},
	"entity_effective_permissions": {
		name: "entity_effective_permissions", key: "id",
		columns: []string{"id", "entity_url", "source_entity_url", "source_grant_id", "permission",
			"subject_kind", "subject_value", "expires_at", "created_at"},
		types: map[string]string{"id": "int8", "entity_url": "text", "source_entity_url": "text",
			"source_grant_id": "int8", "permission": "text", "subject_kind": "text", "subject_value": "text",
			"expires_at": "timestamptz", "created_at": "timestamptz"},
		rows:    sqlEntityPermissionRows,
		filters: map[string]string{"id": "key"},
	},
}

// tableNames lists the tables a shape may be taken of, for the refusal of any other.
const tableNames = "entities, entity_types, runners, runner_runtime_diagnostics, users, entity_effective_permissions"

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
