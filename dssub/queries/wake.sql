-- Queries of wake.go. $now parameters are the store's clock (NULL: the database's).

-- name: AbandonAttempt
UPDATE ds_subscriptions SET attempt_owner = NULL, attempt_until = NULL, due_at = coalesce($4::timestamptz, now())
  WHERE id = $1 AND wake_id = $2 AND attempt_owner = $3

-- name: AcceptDeliveries
-- Webhooks answered 2xx without done for the wakes they were for (subscription $1[i],
-- wake $2[i] at generation $3[i]): each wake stays open for the handler's callbacks
-- under a lease. One statement for the answers of many wakes, taking no lock before it:
-- a wake that ended or moved on meanwhile matches no row. The rows are locked in id
-- order, so that two processes' statements cannot deadlock. A callback that came before
-- the answer already opened the wake; then only the status is refreshed. The lock is
-- the one an UPDATE takes (NO KEY UPDATE): it does not block the key-share locks that
-- inserting a subscription's links takes, in their own order.
WITH k AS (
  SELECT s.id FROM ds_subscriptions s
    JOIN unnest($1::text[], $2::text[], $3::bigint[]) AS u(id, wake_id, generation)
      ON s.id = u.id AND s.wake_id = u.wake_id AND s.generation = u.generation
  ORDER BY s.id
  FOR NO KEY UPDATE OF s)
UPDATE ds_subscriptions d SET status = 'active', last_error = NULL, retry_count = 0, next_attempt_at = NULL,
    phase = CASE WHEN phase = 'delivering' THEN 'open' ELSE phase END,
    attempt_owner = CASE WHEN phase = 'delivering' THEN NULL ELSE attempt_owner END,
    attempt_until = CASE WHEN phase = 'delivering' THEN NULL ELSE attempt_until END,
    lease_until = CASE WHEN phase = 'delivering'
      THEN coalesce($4::timestamptz, clock_timestamp()) + lease_ttl_ms * interval '1 millisecond' ELSE lease_until END,
    due_at = CASE WHEN phase = 'delivering'
      THEN coalesce($4::timestamptz, clock_timestamp()) + lease_ttl_ms * interval '1 millisecond' ELSE due_at END
  FROM k WHERE d.id = k.id

-- name: SelectSubs
-- The subscriptions named in $1 (what evaluations read first, many in one statement).
SELECT {{subColumns}} FROM ds_subscriptions WHERE id = ANY($1::text[])
