-- name: SoftDelete :exec
UPDATE streams SET soft_deleted = true WHERE id = @id;

-- name: DeleteMessages :exec
DELETE FROM stream_messages WHERE stream_id = @stream_id;

-- name: DeleteProducers :exec
DELETE FROM stream_producers WHERE stream_id = @stream_id;

-- name: DeleteDedupe :exec
DELETE FROM stream_dedupe WHERE stream_id = @stream_id;

-- name: DeleteStream :exec
DELETE FROM streams WHERE id = @id;

-- name: UnrefFork :one
UPDATE streams SET refcount = refcount - 1 WHERE id = @id RETURNING id;

-- name: ExpiredStreams :many
SELECT path FROM streams
  WHERE refcount = 0 AND (expires_at <= coalesce(sqlc.narg(now)::timestamptz, now())
    OR last_access_at + ttl_seconds * interval '1 second' <= coalesce(sqlc.narg(now)::timestamptz, now()))
  LIMIT 500;
