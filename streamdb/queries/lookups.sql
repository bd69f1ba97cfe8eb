-- Queries of lookups.go.

-- name: LastEvent
SELECT data FROM stream_messages
  WHERE stream_id = $1 AND substring(data FROM 1 FOR $3) = $2
  ORDER BY seq DESC LIMIT 1

-- name: DedupeHash
SELECT body_hash FROM stream_dedupe WHERE stream_id = $1 AND key = $2

-- name: CountOwned
-- How many live plain and shared-state streams principal $1 created, counted up to $2.
SELECT count(*) FROM (
  SELECT 1 FROM streams WHERE owner_principal = $1 AND access_kind IN ('plain', 'shared') AND NOT soft_deleted LIMIT $2) owned
