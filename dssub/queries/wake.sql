-- Queries of wake.go.

-- name: AbandonAttempt
UPDATE ds_subscriptions SET attempt_owner = NULL, attempt_until = NULL, due_at = now()
  WHERE id = $1 AND wake_id = $2 AND attempt_owner = $3
