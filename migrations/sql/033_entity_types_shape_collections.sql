-- The entity_types shape carries externally_writable_collections, as the reference's
-- table does: Electric's web UI offers an entity's Comments view only when its type's
-- row in that shape lists a comments collection. Rows logged before this migration
-- lack the column (null until the type changes again).
CREATE OR REPLACE FUNCTION shape_entity_type_value(t entity_types) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'name', t.name, 'description', t.description,
        'creation_schema', t.creation_schema::text, 'inbox_schemas', t.inbox_schemas::text,
        'state_schemas', t.state_schemas::text, 'slash_commands', t.slash_commands::text,
        'externally_writable_collections', t.externally_writable_collections::text,
        'serve_endpoint', t.serve_endpoint,
        'default_dispatch_policy', t.default_dispatch_policy::text,
        'revision', t.revision::text,
        'created_at', to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'updated_at', to_char(t.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
$$;
