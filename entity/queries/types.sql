-- Queries of types.go.

-- name: DeleteType
DELETE FROM entity_types WHERE name = $1

-- name: UpsertType
INSERT INTO entity_types (name, description, creation_schema,
    inbox_schemas, state_schemas, slash_commands, serve_endpoint, default_dispatch_policy,
    externally_writable_collections, revision, registered_by)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 1, nullif($10, ''))
  ON CONFLICT (name) DO UPDATE SET description = excluded.description,
    creation_schema = excluded.creation_schema, inbox_schemas = excluded.inbox_schemas,
    state_schemas = excluded.state_schemas, slash_commands = excluded.slash_commands,
    serve_endpoint = excluded.serve_endpoint, default_dispatch_policy = excluded.default_dispatch_policy,
    externally_writable_collections = excluded.externally_writable_collections,
    revision = entity_types.revision + 1, updated_at = now()
  RETURNING {{typeColumns}}

-- name: SelectType
SELECT {{typeColumns}} FROM entity_types WHERE name = $1

-- name: SelectTypes
SELECT {{typeColumns}} FROM entity_types ORDER BY name

-- name: SelectDispatchingTypes
-- Types with a dispatch policy (the runners they name are bound to principals).
SELECT {{typeColumns}} FROM entity_types WHERE default_dispatch_policy IS NOT NULL ORDER BY name

-- name: LockType
SELECT {{typeColumns}} FROM entity_types WHERE name = $1 FOR UPDATE

-- name: SetTypeSchemas
UPDATE entity_types SET inbox_schemas = $2, state_schemas = $3,
    revision = revision + 1, updated_at = now()
  WHERE name = $1 RETURNING {{typeColumns}}

-- fragment: typeColumns
-- What scanType reads, in its order.
name, description, creation_schema, inbox_schemas, state_schemas, slash_commands,
  serve_endpoint, default_dispatch_policy, externally_writable_collections, revision, created_at, updated_at,
  coalesce(registered_by, '')

-- name: CountTypesRegisteredBy
SELECT count(*) FROM (SELECT 1 FROM entity_types WHERE registered_by = $1 LIMIT $2) registered
