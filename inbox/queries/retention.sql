-- Queries of retention.go.

-- name: PurgeDelayed
DELETE FROM delayed_sends WHERE id = ANY(ARRAY(
  SELECT id FROM delayed_sends WHERE completed_at < now() - $1::interval LIMIT $2))
