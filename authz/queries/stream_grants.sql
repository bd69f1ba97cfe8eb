-- Queries of stream_grants.go.

-- name: InsertStreamGrant
INSERT INTO stream_grants (id, stream_id, subject_kind, subject_value, permission, expires_at, created_by)
  VALUES ($1, $2, $3, $4, $5, $6, $7)
  RETURNING {{streamGrantColumns}}

-- name: ListStreamGrants
SELECT {{streamGrantColumns}} FROM stream_grants WHERE stream_id = $1 ORDER BY created_at, id

-- name: DeleteStreamGrant
DELETE FROM stream_grants WHERE stream_id = $1 AND id = $2

-- name: StreamGranted
-- Whether a live grant gives principal $2 (of kind $3) permission $4 on stream $1.
SELECT EXISTS (
  SELECT 1 FROM stream_grants
  WHERE stream_id = $1 AND permission = $4
    AND ((subject_kind = 'principal' AND subject_value = $2) OR (subject_kind = 'principal_kind' AND subject_value = $3))
    AND (expires_at IS NULL OR expires_at > now()))

-- fragment: streamGrantColumns
id, stream_id::text, subject_kind, subject_value, permission, expires_at, created_by, created_at

-- name: CountGrantsBy
-- How many grants principal $1 made, of every kind, counted up to $2.
SELECT count(*) FROM (
  SELECT 1 FROM entity_grants WHERE created_by = $1
  UNION ALL SELECT 1 FROM type_grants WHERE created_by = $1
  UNION ALL SELECT 1 FROM stream_grants WHERE created_by = $1
  LIMIT $2) made
