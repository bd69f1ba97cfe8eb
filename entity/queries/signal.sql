-- Queries of signal.go.

-- name: SetStatus
UPDATE entities SET status = $2, updated_at = now() WHERE url = $1
