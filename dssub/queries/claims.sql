-- Queries of claims.go.

-- name: LockSubByWake
SELECT {{subColumns}} FROM ds_subscriptions WHERE wake_id = $1 FOR UPDATE

-- name: ClaimWriteTokens
-- Claims of wake $1[i] of subscription $2[i] at generation $3[i] store the hash $4[i] of
-- their write tokens, for the wakes that are their subscription's current one; the hashes
-- of those stored are returned. One statement for the claims of many wakes (a
-- subscription appears at most once), and no lock on the subscriptions: a wake that ends
-- meanwhile fences its token anyway (WriteTokensHold requires the token's wake to be
-- current), and a claim of an earlier wake that read the subscription before it moved on
-- never replaces a later wake's token.
INSERT INTO ds_write_tokens (subscription_id, token_hash, wake_id, generation)
  SELECT s.id, u.hash, s.wake_id, s.generation
    FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bytea[]) AS u(wake_id, sub, generation, hash)
    JOIN ds_subscriptions s ON s.wake_id = u.wake_id AND s.id = u.sub AND s.generation = u.generation
    ORDER BY s.id
  ON CONFLICT (subscription_id) DO UPDATE SET token_hash = excluded.token_hash,
    wake_id = excluded.wake_id, generation = excluded.generation, created_at = now()
    WHERE ds_write_tokens.generation <= excluded.generation
  RETURNING token_hash

-- name: SelectSubByWake
SELECT {{subColumns}} FROM ds_subscriptions WHERE wake_id = $1

-- name: WriteTokensHold
-- Which of the checks i (stream $1[i], token hash $2[i]) hold: a token writes to the
-- streams its wake lists, while that wake is the subscription's current one ($3 is the
-- stream root the relative link paths hang from). One statement for the writes of many
-- handlers.
SELECT u.i FROM unnest($1::text[], $2::bytea[]) WITH ORDINALITY AS u(path, hash, i)
  WHERE EXISTS (SELECT 1 FROM ds_write_tokens t
    JOIN ds_subscriptions s ON s.id = t.subscription_id
    JOIN ds_subscription_streams l ON l.subscription_id = s.id
    WHERE t.token_hash = u.hash AND s.wake_id = t.wake_id AND s.generation = t.generation
      AND $3 || l.path = u.path AND l.wake_seq IS NOT NULL)
