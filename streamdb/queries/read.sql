-- name: Touch :exec
UPDATE streams SET last_access_at = coalesce(sqlc.narg(now)::timestamptz, now()) WHERE id = @id;

-- name: ReadRange :many
-- The messages after after_seq up to to_seq whose end is within max_end_pos, but
-- always the first one.
SELECT seq, end_pos, data FROM stream_messages
  WHERE stream_id = @stream_id AND seq > @after_seq AND seq <= @to_seq
    AND (seq = sqlc.arg(after_seq) + 1 OR end_pos <= @max_end_pos)
  ORDER BY seq LIMIT 100000;

-- name: FreshState :one
SELECT tail_seq, tail_pos, closed, soft_deleted FROM streams WHERE id = @id;

-- name: MetaByID :one
SELECT sqlc.embed(s), coalesce(src.path, '')::text AS fork_source_path
  FROM streams s LEFT JOIN streams src ON src.id = s.fork_source_id
  WHERE s.id = @id;

-- name: MetaByPath :one
SELECT sqlc.embed(s), coalesce(src.path, '')::text AS fork_source_path
  FROM streams s LEFT JOIN streams src ON src.id = s.fork_source_id
  WHERE s.path = @path;

-- name: Identify :one
SELECT id, access_kind, coalesce(owner_principal, '')::text AS owner_principal,
    coalesce(entity_url, '')::text AS entity_url, soft_deleted
  FROM streams WHERE path = @path;
