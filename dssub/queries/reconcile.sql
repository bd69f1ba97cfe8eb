-- Queries of reconcile.go.

-- name: TryReconcileLock
SELECT pg_try_advisory_xact_lock($1, $2)

-- name: SubscriptionsWithStaleLinks
SELECT d.id FROM ds_subscriptions d
  WHERE d.wake_id IS NULL AND EXISTS (
    SELECT 1 FROM ds_subscription_streams l
    JOIN stream_heads s ON s.path = $1 || l.path AND NOT s.soft_deleted
    WHERE l.subscription_id = d.id
      AND s.tail_seq > CASE WHEN l.stream_id IS NULL OR l.stream_id = s.id THEN greatest(l.acked_seq, 0) ELSE 0 END)

-- name: DeleteStaleGlobLinks
DELETE FROM ds_subscription_streams l
  WHERE NOT l.explicit
    AND NOT EXISTS (SELECT 1 FROM stream_heads s WHERE s.path = $1 || l.path)
    AND NOT EXISTS (SELECT 1 FROM ds_subscriptions d WHERE d.id = l.subscription_id AND d.wake_id IS NOT NULL)

-- name: ScannedUpTo
SELECT scanned_stream_id FROM ds_state

-- name: LinkNewStreams
INSERT INTO ds_subscription_streams (subscription_id, path, glob, stream_id, acked_seq, acked_pos)
  SELECT u.sub, u.path, true, u.sid, -1, -1
  FROM unnest($1::text[], $2::text[], $3::bigint[]) AS u(sub, path, sid)
  JOIN ds_subscriptions d ON d.id = u.sub
  ON CONFLICT (subscription_id, path) DO UPDATE SET glob = true WHERE NOT ds_subscription_streams.glob
  RETURNING subscription_id

-- name: AdvanceScan
UPDATE ds_state SET scanned_stream_id = $1 WHERE scanned_stream_id < $1

-- name: NewStreamsSince
-- The next $4 streams under the root $2 after id $1, each with whether it is older
-- than $3 (settled: no smaller id can still commit).
SELECT id, path, created_at < now() - $3::interval
  FROM stream_heads WHERE id > $1 AND starts_with(path, $2) ORDER BY id LIMIT $4
