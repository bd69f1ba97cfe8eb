-- Queries of claims.go.

-- name: LockSubByWake
SELECT {{subColumns}} FROM ds_subscriptions WHERE wake_id = $1 FOR UPDATE

-- name: UpsertWriteToken
INSERT INTO ds_write_tokens (subscription_id, token_hash, wake_id, generation)
  VALUES ($1, $2, $3, $4)
  ON CONFLICT (subscription_id) DO UPDATE SET token_hash = excluded.token_hash,
    wake_id = excluded.wake_id, generation = excluded.generation, created_at = now()

-- name: DeleteWakeWriteTokens
DELETE FROM ds_write_tokens WHERE subscription_id = $1 AND wake_id = $2

-- name: WriteTokenHolds
-- A token writes to the streams its wake lists, while that wake is the subscription's
-- current one ($3 is the stream root the relative link paths hang from).
SELECT EXISTS (SELECT 1 FROM ds_write_tokens t
  JOIN ds_subscriptions s ON s.id = t.subscription_id
  JOIN ds_subscription_streams l ON l.subscription_id = s.id
  WHERE t.token_hash = $2 AND s.wake_id = t.wake_id AND s.generation = t.generation
    AND $3 || l.path = $1 AND l.wake_seq IS NOT NULL)
