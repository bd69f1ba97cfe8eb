-- Queries of store.go.

-- name: LockEntityCommands
SELECT pg_advisory_xact_lock($1, hashtext($2))

-- fragment: commandsOf
SELECT name, description, arguments, source, owner, version, updated_at, static_def
  FROM slash_commands WHERE entity_url = $1 ORDER BY name

-- name: SelectCommands
{{commandsOf}}

-- name: LockCommands
{{commandsOf}} FOR UPDATE

-- name: DeleteCommand
DELETE FROM slash_commands WHERE entity_url = $1 AND name = $2

-- name: UpsertCommand
INSERT INTO slash_commands (entity_url, name, description, arguments, source, owner, version,
    updated_at, static_def)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
  ON CONFLICT (entity_url, name) DO UPDATE SET description = excluded.description, arguments = excluded.arguments,
    source = excluded.source, owner = excluded.owner, version = excluded.version, updated_at = excluded.updated_at,
    static_def = excluded.static_def
