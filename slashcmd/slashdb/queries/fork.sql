-- Queries of fork.go.

-- name: CopyCommands
-- The slash-command rows of entity $1, as they are, for its fork $2.
INSERT INTO slash_commands (entity_url, name, description, arguments, source, owner, version, updated_at, static_def)
  SELECT $2, name, description, arguments, source, owner, version, updated_at, static_def
  FROM slash_commands WHERE entity_url = $1

-- name: CopyLayers
INSERT INTO slash_command_layers (entity_url, name, owner, position, layer)
  SELECT $2, name, owner, position, layer FROM slash_command_layers WHERE entity_url = $1
