-- Queries of check.go.

-- name: EntityGranted
-- Whether a live grant gives principal $3 (of kind $4) permission $5 on entity $1, or
-- through propagation on one of its ancestors $2.
SELECT EXISTS (
  SELECT 1 FROM entity_grants
  WHERE (entity_url = $1 OR (entity_url = ANY($2::text[]) AND propagation = 'descendants'))
    AND permission = $5
    AND ((subject_kind = 'principal' AND subject_value = $3) OR (subject_kind = 'principal_kind' AND subject_value = $4))
    AND (expires_at IS NULL OR expires_at > now()))

-- name: TypeGranted
SELECT EXISTS (
  SELECT 1 FROM type_grants
  WHERE type_name = $1 AND permission = $4
    AND ((subject_kind = 'principal' AND subject_value = $2) OR (subject_kind = 'principal_kind' AND subject_value = $3))
    AND (expires_at IS NULL OR expires_at > now()))

-- name: GrantsOf
-- Every live entity grant of permission $3 that reaches principal $1 (of kind $2): what
-- list filters use instead of one check per row.
SELECT entity_url, propagation FROM entity_grants
  WHERE permission = $3
    AND ((subject_kind = 'principal' AND subject_value = $1) OR (subject_kind = 'principal_kind' AND subject_value = $2))
    AND (expires_at IS NULL OR expires_at > now())

-- name: TypesGrantedTo
SELECT DISTINCT type_name FROM type_grants
  WHERE permission = $3
    AND ((subject_kind = 'principal' AND subject_value = $1) OR (subject_kind = 'principal_kind' AND subject_value = $2))
    AND (expires_at IS NULL OR expires_at > now())
