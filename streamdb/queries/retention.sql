-- Queries of retention.go.

-- name: PurgeDedupe
DELETE FROM stream_dedupe WHERE ctid = ANY(ARRAY(
  SELECT ctid FROM stream_dedupe WHERE created_at < now() - $1::interval LIMIT $2))
