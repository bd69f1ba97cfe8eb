-- Queries of listen.go.

-- name: Notify
SELECT pg_notify($1, $2)
