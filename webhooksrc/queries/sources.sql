-- Queries of store.go: webhook_sources belongs to this package.

-- name: Insert
INSERT INTO webhook_sources (webhook_key, endpoint_key, owner_principal, label, description, scheme, secret,
        agent_visible, public, buckets)
  VALUES ($1, $2, $3, $4, nullif($5, ''), $6, $7, $8, $9, $10::jsonb)
  ON CONFLICT DO NOTHING

-- fragment: Columns
webhook_key, endpoint_key, owner_principal, label, coalesce(description, ''), scheme, secret, status,
       agent_visible, public, buckets, revision, updated_at

-- name: ByKey
SELECT {{Columns}}
  FROM webhook_sources WHERE webhook_key = $1

-- name: ByEndpoint
SELECT {{Columns}}
  FROM webhook_sources WHERE endpoint_key = $1

-- name: Visible
-- The active, agent-visible sources p may read: its own, the public ones, or every one
-- for a privileged principal ($2); at most $3, by key.
SELECT {{Columns}}
  FROM webhook_sources
 WHERE status = 'active' AND agent_visible AND ($2 OR public OR owner_principal = $1)
 ORDER BY webhook_key LIMIT $3

-- name: SetStatus
-- A revoked source keeps its row (its keys stay taken, so its streams never change hands)
-- and loses its secret.
UPDATE webhook_sources
   SET status = $2, revision = revision + 1, updated_at = now(),
       secret = CASE WHEN $2 = 'revoked' THEN ''::bytea ELSE secret END
 WHERE webhook_key = $1 AND status <> 'revoked'

-- name: CountOwnedBy
SELECT count(*) FROM (SELECT 1 FROM webhook_sources WHERE owner_principal = $1 AND status <> 'revoked' LIMIT $2) mine

-- name: TakeBucketSlot
-- One more bucket stream for the source, unless it has $2 already.
UPDATE webhook_sources SET bucket_streams = bucket_streams + 1 WHERE endpoint_key = $1 AND bucket_streams < $2

-- name: GiveBucketSlot
UPDATE webhook_sources SET bucket_streams = bucket_streams - 1 WHERE endpoint_key = $1 AND bucket_streams > 0
