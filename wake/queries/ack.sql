-- Queries of ack.go.

-- name: AdvanceScan
UPDATE entity_wake SET scanned_seq = $2, attempts = 0, retry_at = NULL,
  last_error = NULL, consumed = $3, updated_at = now() WHERE entity_url = $1

-- name: DeleteHeld
DELETE FROM inbox_held WHERE entity_url = $1 AND key = $2

-- name: InsertHeld
INSERT INTO inbox_held (entity_url, key, seq, value) VALUES ($1, $2, $3, $4)
  ON CONFLICT (entity_url, key) DO UPDATE SET seq = excluded.seq, value = excluded.value

-- name: SetRetry
UPDATE entity_wake SET attempts = $2, retry_at = $3, last_error = $4, updated_at = now()
  WHERE entity_url = $1

-- name: InsertFailure
INSERT INTO wake_failures (entity_url, seq, kind, key, attempts, error)
  VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (entity_url, seq) DO NOTHING

-- name: CheckFence
SELECT epoch, holder FROM entity_wake WHERE entity_url = $1 FOR UPDATE

-- name: FenceAdmission
-- The group commit's admission check for acknowledgements (fenceAdmission): under the
-- entity_wake row lock, 'fenced' for a claim that no longer holds, 'observed' for an
-- entity others observe; admitted rows are not returned.
WITH req AS (SELECT url, holder, epoch FROM unnest($1::text[], $2::text[], $3::bigint[]) AS u(url, holder, epoch)),
  locked AS (SELECT w.entity_url, w.epoch, w.holder FROM entity_wake w
    WHERE w.entity_url = ANY(ARRAY(SELECT url FROM req)) ORDER BY w.entity_url FOR UPDATE)
  SELECT r.url, CASE WHEN l.entity_url IS NULL OR l.epoch <> r.epoch OR l.holder IS DISTINCT FROM r.holder
      THEN 'fenced' ELSE 'observed' END
  FROM req r LEFT JOIN locked l ON l.entity_url = r.url
  WHERE l.entity_url IS NULL OR l.epoch <> r.epoch OR l.holder IS DISTINCT FROM r.holder
    OR EXISTS (SELECT 1 FROM wake_observations o WHERE o.source_url = r.url)
