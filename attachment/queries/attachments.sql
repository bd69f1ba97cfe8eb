-- Queries of attachment.go.

-- name: InsertAttachment
-- A new attachment; nothing when the entity already has one with this id.
INSERT INTO attachments (entity_url, id, stream_path, mime_type, filename, byte_length, sha256, entry, created_by)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
  ON CONFLICT (entity_url, id) DO NOTHING

-- name: GetAttachment
SELECT stream_path, mime_type, filename, byte_length, sha256, entry
  FROM attachments WHERE entity_url = $1 AND id = $2

-- name: DeleteAttachment
DELETE FROM attachments WHERE entity_url = $1 AND id = $2 RETURNING stream_path

-- name: UsageBy
-- How many attachments principal $1 uploaded and their bytes (for its quotas).
SELECT count(*), coalesce(sum(byte_length), 0)::bigint FROM attachments WHERE created_by = $1

-- name: AttachmentsOf
-- The attachments of entity $1 (a fork copies them).
SELECT id, stream_path, mime_type, filename, byte_length, sha256, entry, created_by
  FROM attachments WHERE entity_url = $1 ORDER BY id
