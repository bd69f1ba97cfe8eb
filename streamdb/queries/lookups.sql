-- Queries of lookups.go.

-- name: LastEvent
SELECT data FROM stream_messages
  WHERE stream_id = $1 AND substring(data FROM 1 FOR $3) = $2
  ORDER BY seq DESC LIMIT 1

-- name: DedupeHash
SELECT body_hash FROM stream_dedupe WHERE stream_id = $1 AND key = $2
