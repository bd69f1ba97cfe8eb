-- name: LockPath :exec
-- Serializes the creates of one path for the rest of the transaction.
SELECT pg_advisory_xact_lock(@lock_class::int4, hashtext(@path::text));

-- name: InsertStream :one
INSERT INTO streams (path, content_type, tail_seq, tail_pos, ttl_seconds, expires_at,
    fork_source_id, fork_seq, fork_pos, fork_offset, fork_sub_offset,
    access_kind, owner_principal, entity_url, last_access_at)
  VALUES (@path, @content_type, @tail_seq, @tail_pos, @ttl_seconds, @expires_at,
    @fork_source_id, @fork_seq, @fork_pos, @fork_offset, @fork_sub_offset,
    @access_kind, nullif(@owner_principal::text, ''), nullif(@entity_url::text, ''),
    coalesce(sqlc.narg(now)::timestamptz, now()))
  RETURNING id, last_access_at, created_at;

-- name: RefFork :exec
UPDATE streams SET refcount = refcount + 1 WHERE id = @id;

-- name: OffsetAt :one
SELECT end_pos FROM stream_messages WHERE stream_id = @stream_id AND seq = @seq;

-- name: MessageAt :one
SELECT data FROM stream_messages WHERE stream_id = @stream_id AND seq = @seq;

-- name: LockStream :one
SELECT sqlc.embed(s), coalesce(src.path, '')::text AS fork_source_path
  FROM streams s LEFT JOIN streams src ON src.id = s.fork_source_id
  WHERE s.path = @path FOR UPDATE OF s;
