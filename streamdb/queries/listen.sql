-- name: Notify :exec
SELECT pg_notify(@channel::text, @payload::text);
