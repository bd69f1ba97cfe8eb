-- Queries of timers.go.

-- name: Schedule
INSERT INTO wake_timers (id, entity_url, due_at, payload) VALUES ($1, $2, $3, $4)

-- name: DueTimers
SELECT id, entity_url, due_at, payload FROM wake_timers
  WHERE due_at <= coalesce($1::timestamptz, now()) ORDER BY due_at LIMIT 100 FOR UPDATE SKIP LOCKED

-- name: DeleteTimer
DELETE FROM wake_timers WHERE id = $1

-- name: NextTimerDue
SELECT min(due_at) FROM wake_timers
