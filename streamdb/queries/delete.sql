-- Queries of delete.go.

-- name: SoftDelete
UPDATE streams SET soft_deleted = true WHERE id = $1

-- name: DeleteMessages
DELETE FROM stream_messages WHERE stream_id = $1

-- name: DeleteProducers
DELETE FROM stream_producers WHERE stream_id = $1

-- name: DeleteDedupe
DELETE FROM stream_dedupe WHERE stream_id = $1

-- name: DeleteStream
DELETE FROM streams WHERE id = $1

-- name: UnrefFork
UPDATE streams SET refcount = refcount - 1 WHERE id = $1 RETURNING id

-- name: ExpiredStreams
SELECT path FROM streams
  WHERE refcount = 0 AND (expires_at <= coalesce($1::timestamptz, now())
    OR last_access_at + ttl_seconds * interval '1 second' <= coalesce($1::timestamptz, now()))
  LIMIT 500
