-- Queries of claims.go.

-- name: LockSubByWake
SELECT {{subColumns}} FROM ds_subscriptions WHERE wake_id = $1 FOR UPDATE

-- name: ClaimWriteToken
-- A claim of wake $1 of subscription $2 at generation $3 stores the hash $4 of its write
-- token, when that wake is the subscription's current one. One statement and no lock on
-- the subscription: a wake that ends meanwhile fences the token anyway (WriteTokenHolds
-- requires the token's wake to be current), and a claim of an earlier wake that read the
-- subscription before it moved on never replaces a later wake's token.
INSERT INTO ds_write_tokens (subscription_id, token_hash, wake_id, generation)
  SELECT s.id, $4, s.wake_id, s.generation FROM ds_subscriptions s
    WHERE s.wake_id = $1 AND s.id = $2 AND s.generation = $3
  ON CONFLICT (subscription_id) DO UPDATE SET token_hash = excluded.token_hash,
    wake_id = excluded.wake_id, generation = excluded.generation, created_at = now()
    WHERE ds_write_tokens.generation <= excluded.generation
  RETURNING subscription_id

-- name: SelectSubByWake
SELECT {{subColumns}} FROM ds_subscriptions WHERE wake_id = $1

-- name: WriteTokenHolds
-- A token writes to the streams its wake lists, while that wake is the subscription's
-- current one ($3 is the stream root the relative link paths hang from).
SELECT EXISTS (SELECT 1 FROM ds_write_tokens t
  JOIN ds_subscriptions s ON s.id = t.subscription_id
  JOIN ds_subscription_streams l ON l.subscription_id = s.id
  WHERE t.token_hash = $2 AND s.wake_id = t.wake_id AND s.generation = t.generation
    AND $3 || l.path = $1 AND l.wake_seq IS NOT NULL)
