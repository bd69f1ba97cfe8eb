-- Queries of peers.go. $now parameters are the store's clock (NULL: the database's now()).

-- name: RegisterListener
INSERT INTO stream_listeners (proc_id, last_seen) VALUES ($1, coalesce($2::timestamptz, now()))
  ON CONFLICT (proc_id) DO UPDATE SET last_seen = excluded.last_seen

-- name: Peers
WITH me AS (
    UPDATE stream_listeners SET last_seen = coalesce($3::timestamptz, now()) WHERE proc_id = $1 RETURNING 1)
  SELECT count(*) FROM stream_listeners
  WHERE proc_id <> $1 AND last_seen > coalesce($3::timestamptz, now()) - $2::interval

-- name: UnregisterListener
DELETE FROM stream_listeners WHERE proc_id = $1
