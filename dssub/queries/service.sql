-- Queries of service.go.

-- name: LinkMatchedStreams
INSERT INTO ds_subscription_streams (subscription_id, path, glob, stream_id, acked_seq, acked_pos)
  SELECT u.sub, u.path, true, u.sid, -1, -1
  FROM unnest($1::text[], $2::text[], $3::bigint[]) AS u(sub, path, sid)
  JOIN ds_subscriptions d ON d.id = u.sub
  ON CONFLICT (subscription_id, path) DO UPDATE SET glob = true WHERE NOT ds_subscription_streams.glob

-- name: DueSubscriptions
SELECT id FROM ds_subscriptions WHERE due_at <= coalesce($1::timestamptz, now()) ORDER BY due_at LIMIT 256
