-- Queries of wake.go.

-- name: AbandonAttempt
UPDATE ds_subscriptions SET attempt_owner = NULL, attempt_until = NULL, due_at = now()
  WHERE id = $1 AND wake_id = $2 AND attempt_owner = $3

-- name: AcceptDelivery
-- A webhook answered 2xx without done for the wake it was for ($2 at generation $3):
-- the wake stays open for the handler's callbacks under a lease. One statement, no lock
-- taken first: a wake that ended or moved on meanwhile matches no row. A callback that
-- came before the answer already opened the wake; then only the status is refreshed.
UPDATE ds_subscriptions SET status = 'active', last_error = NULL, retry_count = 0, next_attempt_at = NULL,
    phase = CASE WHEN phase = 'delivering' THEN 'open' ELSE phase END,
    attempt_owner = CASE WHEN phase = 'delivering' THEN NULL ELSE attempt_owner END,
    attempt_until = CASE WHEN phase = 'delivering' THEN NULL ELSE attempt_until END,
    lease_until = CASE WHEN phase = 'delivering'
      THEN clock_timestamp() + lease_ttl_ms * interval '1 millisecond' ELSE lease_until END,
    due_at = CASE WHEN phase = 'delivering'
      THEN clock_timestamp() + lease_ttl_ms * interval '1 millisecond' ELSE due_at END
  WHERE id = $1 AND wake_id = $2 AND generation = $3
