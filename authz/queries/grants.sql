-- Queries of grants.go.

-- name: InsertEntityGrant
INSERT INTO entity_grants (id, entity_url, subject_kind, subject_value, permission, propagation,
    copy_to_children, expires_at, created_by)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
  RETURNING {{entityGrantColumns}}

-- name: ListEntityGrants
SELECT {{entityGrantColumns}} FROM entity_grants WHERE entity_url = $1 ORDER BY created_at, id

-- name: DeleteEntityGrant
DELETE FROM entity_grants WHERE entity_url = $1 AND id = $2

-- name: CopyGrantsToChild
-- The parent's grants marked copy_to_children, copied onto a new child in its spawn.
INSERT INTO entity_grants (id, entity_url, subject_kind, subject_value, permission, propagation,
    copy_to_children, expires_at, created_by)
  SELECT 'g_' || md5(random()::text || id), $2, subject_kind, subject_value, permission, propagation,
      copy_to_children, expires_at, created_by
  FROM entity_grants
  WHERE entity_url = $1 AND copy_to_children AND (expires_at IS NULL OR expires_at > now())

-- name: InsertTypeGrant
INSERT INTO type_grants (id, type_name, subject_kind, subject_value, permission, expires_at, created_by)
  VALUES ($1, $2, $3, $4, $5, $6, $7)
  RETURNING {{typeGrantColumns}}

-- name: ListTypeGrants
SELECT {{typeGrantColumns}} FROM type_grants WHERE type_name = $1 ORDER BY created_at, id

-- name: DeleteTypeGrant
DELETE FROM type_grants WHERE type_name = $1 AND id = $2

-- name: DropTypeGrants
DELETE FROM type_grants WHERE type_name = $1

-- fragment: entityGrantColumns
id, entity_url, subject_kind, subject_value, permission, propagation, copy_to_children, expires_at,
  created_by, created_at

-- fragment: typeGrantColumns
id, type_name, subject_kind, subject_value, permission, expires_at, created_by, created_at
