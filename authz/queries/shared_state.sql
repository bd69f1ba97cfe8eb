-- Queries of shared_state.go.

-- name: SharedStateLinks
-- The entities shared-state stream $1 is linked to (bounded: a shared state is linked
-- to the entities that made or connected to it).
SELECT entity_url FROM shared_state_links WHERE stream_id = $1 ORDER BY created_at, entity_url LIMIT $2

-- name: LinkSharedState
INSERT INTO shared_state_links (stream_id, entity_url, created_by) VALUES ($1, $2, $3)
  ON CONFLICT (stream_id, entity_url) DO NOTHING
