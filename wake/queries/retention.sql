-- Queries of retention.go.

-- name: PurgeFailures
DELETE FROM wake_failures WHERE ctid = ANY(ARRAY(
  SELECT ctid FROM wake_failures WHERE failed_at < now() - $1::interval LIMIT $2))
