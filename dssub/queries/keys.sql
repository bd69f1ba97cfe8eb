-- Queries of keys.go.

-- name: LockKeys
SELECT pg_advisory_xact_lock($1, $2)

-- name: SelectKeys
SELECT kid, kind, secret, coalesce(public_key, ''::bytea) FROM ds_keys
  WHERE retired_at IS NULL ORDER BY created_at DESC, kid

-- name: InsertSigningKey
INSERT INTO ds_keys (kid, kind, secret, public_key) VALUES ($1, 'ed25519', $2, $3)

-- name: InsertHMACKey
INSERT INTO ds_keys (kid, kind, secret) VALUES ($1, 'hmac', $2)
