-- Queries of read.go.

-- name: Touch
UPDATE streams SET last_access_at = coalesce($2::timestamptz, now()) WHERE id = $1

-- name: ReadRange
SELECT seq, end_pos, data FROM stream_messages
  WHERE stream_id = $1 AND seq > $2 AND seq <= $3 AND (seq = $2 + 1 OR end_pos <= $4)
  ORDER BY seq LIMIT 100000

-- name: FreshState
SELECT tail_seq, tail_pos, closed, soft_deleted FROM streams WHERE id = $1

-- name: MetaByID
SELECT {{meta}}
  WHERE s.id = $1

-- name: MetaByPath
SELECT {{meta}}
  WHERE s.path = $1

-- name: Identify
SELECT id, access_kind, coalesce(owner_principal, ''), coalesce(entity_url, ''), soft_deleted
  FROM streams WHERE path = $1
