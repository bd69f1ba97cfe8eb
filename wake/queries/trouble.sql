-- Queries of trouble.go.

-- name: NoteError
UPDATE entity_wake SET last_error = $4, updated_at = now()
  WHERE entity_url = $1 AND holder = $2 AND epoch = $3
