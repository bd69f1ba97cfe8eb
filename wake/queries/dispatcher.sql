-- Queries of dispatcher.go.

-- name: ResolveStreams
SELECT stream_id, entity_url, entity_type FROM entity_wake WHERE stream_id = ANY($1)
