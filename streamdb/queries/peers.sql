-- Queries of peers.go.

-- name: RegisterListener
INSERT INTO stream_listeners (proc_id) VALUES ($1)
  ON CONFLICT (proc_id) DO UPDATE SET last_seen = now()

-- name: Peers
WITH me AS (
    UPDATE stream_listeners SET last_seen = now() WHERE proc_id = $1 RETURNING 1)
  SELECT count(*) FROM stream_listeners
  WHERE proc_id <> $1 AND last_seen > now() - $2::interval

-- name: UnregisterListener
DELETE FROM stream_listeners WHERE proc_id = $1
