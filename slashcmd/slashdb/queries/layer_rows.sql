-- Queries of layer_rows.go.

-- name: SelectLayers
SELECT name, position, layer::text FROM slash_command_layers
  WHERE entity_url = $1 ORDER BY name, position

-- name: UpsertLayers
INSERT INTO slash_command_layers (entity_url, name, owner, position, layer)
  VALUES ($1, $2, $3, $4, $5)
  ON CONFLICT (entity_url, name, owner) DO UPDATE SET position = excluded.position, layer = excluded.layer

-- name: DeleteLayers
DELETE FROM slash_command_layers WHERE entity_url = $1 AND name = $2 AND owner = ANY($3)
