-- name: RegisterListener :exec
-- now, here and in every query that takes one, is the store's clock (clock.Clock.SQL):
-- NULL, on the wall clock, leaves the time to the database's now().
INSERT INTO stream_listeners (proc_id, last_seen) VALUES (@proc_id, coalesce(sqlc.narg(now)::timestamptz, now()))
  ON CONFLICT (proc_id) DO UPDATE SET last_seen = excluded.last_seen;

-- name: Peers :one
-- Renews this process's row and counts the other processes seen within expiry.
WITH me AS (
    UPDATE stream_listeners SET last_seen = coalesce(sqlc.narg(now)::timestamptz, now()) WHERE proc_id = @proc_id RETURNING 1)
  SELECT count(*) FROM stream_listeners l
  WHERE l.proc_id <> @proc_id AND l.last_seen > coalesce(sqlc.narg(now)::timestamptz, now()) - @expiry::interval;

-- name: UnregisterListener :exec
DELETE FROM stream_listeners WHERE proc_id = @proc_id;
