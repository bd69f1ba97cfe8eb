-- Queries of claim.go. Leases are set and judged at coalesce($now, now()): the
-- dispatcher's clock, which is NULL (the database's own) outside tests.

-- name: RegisterHolder
INSERT INTO wake_holders (holder_id, lease_until, hostname)
  VALUES ($1, coalesce($4::timestamptz, now()) + $2::interval, $3)
  ON CONFLICT (holder_id) DO UPDATE SET lease_until = excluded.lease_until

-- name: Heartbeat
UPDATE wake_holders SET lease_until = coalesce($3::timestamptz, now()) + $2::interval WHERE holder_id = $1

-- name: ReleaseHeldBy
UPDATE entity_wake SET holder = NULL, updated_at = now() WHERE holder = $1

-- name: DeleteHolder
DELETE FROM wake_holders WHERE holder_id = $1

-- name: Claim
WITH c AS (
    SELECT w.entity_url FROM entity_wake w
    WHERE w.entity_url = ANY($2)
      AND (w.holder IS NULL OR w.holder = $1 OR NOT EXISTS (
        SELECT 1 FROM wake_holders h WHERE h.holder_id = w.holder AND h.lease_until > coalesce($3::timestamptz, now())))
    ORDER BY w.entity_url
    FOR UPDATE SKIP LOCKED)
  UPDATE entity_wake w SET holder = $1, epoch = w.epoch + 1, updated_at = now()
  FROM c WHERE w.entity_url = c.entity_url
  RETURNING w.entity_url, w.entity_type, w.stream_id, w.epoch, w.scanned_seq, w.attempts, w.retry_at, w.consumed

-- name: Release
UPDATE entity_wake SET holder = NULL, updated_at = now()
  WHERE entity_url = $1 AND holder = $2 AND epoch = $3

-- name: PendingUnheld
SELECT w.entity_url FROM entity_wake w
  JOIN stream_heads s ON s.id = w.stream_id
  JOIN entity_statuses e ON e.url = w.entity_url
  WHERE w.entity_type = ANY($1) AND s.tail_seq > w.scanned_seq AND NOT s.closed
    AND e.status <> ALL($3)
    AND (w.holder IS NULL OR NOT EXISTS (
      SELECT 1 FROM wake_holders h WHERE h.holder_id = w.holder AND h.lease_until > coalesce($4::timestamptz, now())))
  LIMIT $2
