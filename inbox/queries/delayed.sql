-- Queries of delayed.go. A send is due at coalesce($now, now()): the store's clock, NULL
-- (the database's own) outside tests.

-- name: InsertDelayed
INSERT INTO delayed_sends (entity_url, fire_at, request)
  VALUES ($1, coalesce($4::timestamptz, now()) + make_interval(secs => $2), $3)

-- name: DueDelayed
SELECT id FROM delayed_sends
  WHERE completed_at IS NULL AND fire_at <= coalesce($2::timestamptz, now()) ORDER BY fire_at, id LIMIT $1

-- name: NextDelayedDue
SELECT min(fire_at) FROM delayed_sends WHERE completed_at IS NULL

-- name: LockDelayed
SELECT entity_url, request::text, coalesce(owner_url, ''), coalesce(manifest_key, ''), coalesce(manifest::text, '')
  FROM delayed_sends
  WHERE id = $1 AND completed_at IS NULL AND fire_at <= coalesce($2::timestamptz, now()) FOR UPDATE SKIP LOCKED

-- name: FailDelayed
UPDATE delayed_sends SET completed_at = now(), last_error = $2 WHERE id = $1

-- name: DeleteDelayed
DELETE FROM delayed_sends WHERE id = $1

-- name: GiveUpDelayed
UPDATE delayed_sends SET completed_at = now(), last_error = $2
  WHERE id = $1 AND completed_at IS NULL

-- name: CancelScheduled
-- The pending future_send of owner $1's schedule $2 (replaced or deleted).
DELETE FROM delayed_sends WHERE owner_url = $1 AND manifest_key = $2 AND completed_at IS NULL

-- name: InsertScheduled
INSERT INTO delayed_sends (entity_url, fire_at, request, owner_url, manifest_key, manifest, created_by)
  VALUES ($1, $2, $3, $4, $5, $6, $7)

-- name: CountScheduledBy
-- How many pending future_send schedules principal $1 made, counted up to $2.
SELECT count(*) FROM (
  SELECT 1 FROM delayed_sends WHERE created_by = $1 AND completed_at IS NULL LIMIT $2) pending

-- name: HasScheduled
SELECT EXISTS (SELECT 1 FROM delayed_sends WHERE owner_url = $1 AND manifest_key = $2 AND completed_at IS NULL)
