-- Queries of tags.go.

-- name: SetTags
UPDATE entities SET tags = $2, updated_at = now() WHERE url = $1 RETURNING updated_at
