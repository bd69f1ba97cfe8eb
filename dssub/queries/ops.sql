-- Queries of ops.go.

-- name: InsertSubscription
INSERT INTO ds_subscriptions (id, type, pattern, webhook_url, wake_stream,
    lease_ttl_ms, description, config_hash, base_url, created_by)
  VALUES ($1, $2, nullif($3, ''), nullif($4, ''), nullif($5, ''), $6, $7, $8, $9, nullif($10, ''))
  ON CONFLICT (id) DO NOTHING

-- name: CountSubscriptionsBy
SELECT count(*) FROM (SELECT 1 FROM ds_subscriptions WHERE created_by = $1 LIMIT $2) made

-- name: StreamsUnderPattern
SELECT id, path, tail_seq, tail_pos FROM stream_heads
  WHERE starts_with(path, $1) AND NOT soft_deleted

-- name: LinkGlobMatches
INSERT INTO ds_subscription_streams (subscription_id, path, glob, stream_id, acked_seq, acked_pos)
  SELECT $1, u.path, true, u.sid, u.seq, u.pos
  FROM unnest($2::text[], $3::bigint[], $4::bigint[], $5::bigint[]) AS u(path, sid, seq, pos)
  ON CONFLICT (subscription_id, path) DO UPDATE SET glob = true

-- name: DeleteSubscription
DELETE FROM ds_subscriptions WHERE id = $1

-- name: UnmarkExplicit
UPDATE ds_subscription_streams SET explicit = false
  WHERE subscription_id = $1 AND path = $2 AND explicit

-- name: DeleteUnlinkedStreams
DELETE FROM ds_subscription_streams
  WHERE subscription_id = $1 AND path = $2 AND NOT explicit AND NOT glob
