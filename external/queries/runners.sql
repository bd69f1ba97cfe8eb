-- Queries of runners.go.

-- fragment: runnerColumns
-- What scanRunner reads, in its order.
id, label, owner_principal, kind, admin_status, wake_stream, sandbox_profiles::text,
  lease_until, last_heartbeat_at, coalesce(wake_stream_offset, ''), coalesce(diagnostics::text, ''),
  created_at, updated_at, clock_timestamp()

-- name: InsertRunner
INSERT INTO runners (id, label, owner_principal, kind, admin_status, wake_stream, sandbox_profiles)
  VALUES ($1, $2, $3, $4, $5, $6, $7)
  ON CONFLICT (id) DO NOTHING
  RETURNING {{runnerColumns}}

-- name: UpdateRunner
-- A runner registering again (after a restart, say) updates what it says of itself.
UPDATE runners SET label = $2, kind = $3, sandbox_profiles = $4, updated_at = now()
  WHERE id = $1
  RETURNING {{runnerColumns}}

-- name: SelectRunner
SELECT {{runnerColumns}} FROM runners WHERE id = $1

-- name: ListRunners
SELECT {{runnerColumns}} FROM runners WHERE $1 = '' OR owner_principal = $1 ORDER BY id

-- name: Heartbeat
UPDATE runners SET lease_until = now() + $2::interval, last_heartbeat_at = now(),
    wake_stream_offset = coalesce($3, wake_stream_offset), diagnostics = coalesce($4::json, diagnostics),
    updated_at = now()
  WHERE id = $1
  RETURNING {{runnerColumns}}

-- name: SetAdminStatus
UPDATE runners SET admin_status = $2, updated_at = now() WHERE id = $1 RETURNING {{runnerColumns}}

-- name: CountRunnersOf
SELECT count(*) FROM (SELECT 1 FROM runners WHERE owner_principal = $1 LIMIT $2) owned
