-- Queries of create.go.

-- name: LockPath
SELECT pg_advisory_xact_lock($1, hashtext($2))

-- name: InsertStream
INSERT INTO streams (path, content_type, tail_seq, tail_pos, ttl_seconds, expires_at,
    fork_source_id, fork_seq, fork_pos, fork_offset, fork_sub_offset,
    access_kind, owner_principal, entity_url, last_access_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, nullif($13, ''), nullif($14, ''), coalesce($15::timestamptz, now()))
  RETURNING id, last_access_at, created_at

-- name: RefFork
UPDATE streams SET refcount = refcount + 1 WHERE id = $1

-- name: OffsetAt
SELECT end_pos FROM stream_messages WHERE stream_id = $1 AND seq = $2

-- name: MessageAt
SELECT data FROM stream_messages WHERE stream_id = $1 AND seq = $2

-- name: LockStream
SELECT {{meta}}
  WHERE s.path = $1 FOR UPDATE OF s
