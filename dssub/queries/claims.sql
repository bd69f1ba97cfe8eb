-- Queries of claims.go.

-- name: LockSubByWake
SELECT {{subColumns}} FROM ds_subscriptions WHERE wake_id = $1 FOR UPDATE

-- name: UpsertWriteToken
INSERT INTO ds_write_tokens (stream_path, token_hash, subscription_id, wake_id, generation)
  VALUES ($1, $2, $3, $4, $5)
  ON CONFLICT (stream_path) DO UPDATE SET token_hash = excluded.token_hash,
    subscription_id = excluded.subscription_id, wake_id = excluded.wake_id,
    generation = excluded.generation, created_at = now()

-- name: DeleteWakeWriteTokens
DELETE FROM ds_write_tokens WHERE subscription_id = $1 AND wake_id = $2

-- name: WriteTokenHolds
-- A token writes to its stream while its wake is the subscription's current one.
SELECT EXISTS (SELECT 1 FROM ds_write_tokens t
  JOIN ds_subscriptions s ON s.id = t.subscription_id
  WHERE t.stream_path = $1 AND t.token_hash = $2
    AND s.wake_id = t.wake_id AND s.generation = t.generation)

-- name: SubOfWake
SELECT id FROM ds_subscriptions WHERE wake_id = $1
