-- Queries of reconcile.go.

-- name: EntitiesBehindType
SELECT url FROM entities
  WHERE type = $1 AND status <> ALL($3) AND commands_revision < $2
  ORDER BY url LIMIT 200

-- name: SetCommandsRevision
UPDATE entities SET commands_revision = $2
  WHERE url = $1 AND commands_revision < $2 AND status <> ALL($3)
