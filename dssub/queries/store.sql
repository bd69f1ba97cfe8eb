-- Queries of store.go.

-- name: UpdateWakeState
UPDATE ds_subscriptions SET status = $2, generation = $3, wake_id = nullif($4, ''),
    phase = nullif($5, ''), holder = nullif($6, ''), lease_until = $7, next_attempt_at = $8,
    attempt_until = $9, due_at = $10, retry_count = $11, attempt_owner = nullif($12, ''),
    last_error = nullif($13, '')
  WHERE id = $1

-- name: RebaseLinks
UPDATE ds_subscription_streams l SET stream_id = s.id,
    acked_seq = CASE WHEN l.stream_id IS NULL THEN l.acked_seq ELSE -1 END,
    acked_pos = CASE WHEN l.stream_id IS NULL THEN l.acked_pos ELSE -1 END,
    wake_seq = NULL, wake_pos = NULL
  FROM stream_heads s
  WHERE l.subscription_id = $1 AND s.path = $2 || l.path AND NOT s.soft_deleted
    AND l.stream_id IS DISTINCT FROM s.id

-- name: SelectLinks
SELECT l.path, l.explicit, l.glob, l.stream_id, l.acked_seq, l.acked_pos,
    coalesce(s.id, 0), coalesce(s.tail_seq, 0), coalesce(s.tail_pos, 0)
  FROM ds_subscription_streams l
  LEFT JOIN stream_heads s ON s.path = $2 || l.path AND NOT s.soft_deleted
  WHERE l.subscription_id = $1
  ORDER BY l.path

-- name: TakeWakeSnapshot
-- The tails a new wake lists ($2..$4) replace the previous wake's: listed links get
-- theirs, every other link of subscription $1 none. One statement, not a clear and a set.
UPDATE ds_subscription_streams l SET wake_seq = k.seq, wake_pos = k.pos
  FROM (SELECT x.path, u.seq, u.pos FROM ds_subscription_streams x
          LEFT JOIN unnest($2::text[], $3::bigint[], $4::bigint[]) AS u(path, seq, pos) ON u.path = x.path
          WHERE x.subscription_id = $1) k
  WHERE l.subscription_id = $1 AND l.path = k.path
    AND (k.seq IS NOT NULL OR l.wake_seq IS NOT NULL)

-- name: AckSnapshot
UPDATE ds_subscription_streams SET acked_seq = wake_seq, acked_pos = wake_pos, failures = 0
  WHERE subscription_id = $1 AND wake_seq IS NOT NULL AND (wake_seq, wake_pos) > (acked_seq, acked_pos)

-- name: UpdateAcked
UPDATE ds_subscription_streams SET acked_seq = $3, acked_pos = $4, failures = 0,
    stream_id = coalesce($5, stream_id)
  WHERE subscription_id = $1 AND path = $2

-- name: BumpVersion
UPDATE ds_state SET version = version + 1

-- name: LinkExplicit
INSERT INTO ds_subscription_streams (subscription_id, path, explicit, stream_id, acked_seq, acked_pos)
  SELECT $1, u.path, true, s.id, coalesce(s.tail_seq, 0), coalesce(s.tail_pos, 0)
  FROM unnest($2::text[]) AS u(path)
  LEFT JOIN stream_heads s ON s.path = $3 || u.path AND NOT s.soft_deleted
  ON CONFLICT (subscription_id, path) DO UPDATE SET explicit = true

-- name: LinkExplicitFromStart
-- A dispatch link, made in the transaction that spawns the entity: what the spawn wrote
-- is the first work.
INSERT INTO ds_subscription_streams (subscription_id, path, explicit, stream_id, acked_seq, acked_pos)
  SELECT $1, u.path, true, s.id, 0, 0
  FROM unnest($2::text[]) AS u(path)
  LEFT JOIN stream_heads s ON s.path = $3 || u.path AND NOT s.soft_deleted
  ON CONFLICT (subscription_id, path) DO UPDATE SET explicit = true

-- name: LockSub
SELECT {{subColumns}} FROM ds_subscriptions WHERE id = $1 FOR UPDATE

-- name: SelectSub
SELECT {{subColumns}} FROM ds_subscriptions WHERE id = $1

-- fragment: subColumns
-- What scanSub reads, in its order. The last column is the database's clock, which the
-- wake decisions made from the row use (scanSub puts a test clock's time in its place).
id, type, coalesce(pattern, ''), coalesce(webhook_url, ''), coalesce(wake_stream, ''),
  coalesce(description, ''), lease_ttl_ms, config_hash, base_url, created_at, status, generation,
  coalesce(wake_id, ''), coalesce(phase, ''), coalesce(holder, ''), lease_until, next_attempt_at,
  attempt_until, due_at, retry_count, coalesce(attempt_owner, ''), coalesce(last_error, ''), clock_timestamp()

-- name: LockSubs
-- The subscriptions named in $1 that no other transaction holds, locked (in id order)
-- with the lock an UPDATE takes: it does not block the key-share locks that inserting
-- links and write tokens takes. A held one is skipped, not waited for: a batch must not
-- make every subscription in it wait for one (the caller handles those on their own).
SELECT {{subColumns}} FROM ds_subscriptions WHERE id = ANY($1::text[]) ORDER BY id FOR NO KEY UPDATE SKIP LOCKED

-- name: SelectLinksOf
-- SelectLinks for the subscriptions named in $1 at once, by subscription, with the tail
-- each link's current wake listed (its snapshot).
SELECT l.subscription_id, l.path, l.explicit, l.glob, l.stream_id, l.acked_seq, l.acked_pos,
    coalesce(s.id, 0), coalesce(s.tail_seq, 0), coalesce(s.tail_pos, 0), l.wake_seq, l.wake_pos
  FROM ds_subscription_streams l
  LEFT JOIN stream_heads s ON s.path = $2 || l.path AND NOT s.soft_deleted
  WHERE l.subscription_id = ANY($1::text[])
  ORDER BY l.subscription_id, l.path
