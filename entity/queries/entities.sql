-- Queries of entities.go.

-- name: EntityExists
SELECT 1 FROM entities WHERE url = $1

-- name: EntityCreatedAt
-- Where a list page that continues after this entity starts (List's cursor).
SELECT created_at FROM entities WHERE url = $1

-- name: FinishStop
UPDATE entities SET status = $2, updated_at = now() WHERE url = $1 AND status = $3

-- name: Unpause
UPDATE entities SET status = $2, updated_at = now()
  WHERE url = $1 AND status = $3

-- name: CurrentTxid
SELECT pg_current_xact_id()::text::bigint

-- name: InsertEntity
-- Spawn args are {} when the spawn gave none, and the type's default dispatch policy is
-- kept as the entity's (the entities shape shows both, as the reference stores them).
INSERT INTO entities (url, type, instance_id, status, stream_id,
    write_token, tags, spawn_args, parent, created_by, type_revision, inbox_schemas, state_schemas, commands_revision,
    dispatch_policy)
  VALUES ($1, $2, $3, $13, $4, $5, $6, coalesce($7::json, '{}'), $8, $9, $10, $11, $12, $10, $14)
  ON CONFLICT (url) DO NOTHING RETURNING {{entityColumns}}

-- name: SelectEntity
SELECT {{entityColumns}} FROM entities WHERE url = $1

-- name: SelectEntities
SELECT {{entityColumns}} FROM entities WHERE url = ANY($1::text[])

-- name: LockEntity
SELECT {{entityColumns}} FROM entities WHERE url = $1 FOR UPDATE

-- name: ListEntities
-- List appends the filters it was given, the order and the limit.
SELECT {{entityColumns}} FROM entities

-- name: SendAdmission
-- The group commit's admission check for sends (SendAdmission): the targets whose
-- status it must judge. One primary-key lookup per target (a LATERAL subquery kept
-- apart with OFFSET 0), whatever the statistics say: the planner otherwise prefers the
-- status index, which reads every killed entity once there are many. {{statuses}} is
-- the statuses to report, from the status machine in status.go.
-- An entity under a fork (a live entity_fork_locks row, fork.go) is reported as
-- 'forking', whatever its status: another primary-key lookup, in a table that is empty
-- but while forks run.
SELECT e.url, CASE WHEN f.url IS NULL THEN e.status ELSE 'forking' END FROM unnest($1::text[]) AS u(url)
  CROSS JOIN LATERAL (SELECT url, status FROM entities WHERE url = u.url OFFSET 0) AS e
  LEFT JOIN LATERAL (SELECT url FROM entity_fork_locks
    WHERE url = u.url AND expires_at > now() OFFSET 0) AS f ON true
  WHERE (e.status = ANY('{{statuses}}'::text[]) OR f.url IS NOT NULL)
    AND $2::text[] IS NOT NULL AND $3::bigint[] IS NOT NULL

-- fragment: entityColumns
-- What scanEntity reads, in its order.
url, type, instance_id, status, stream_id, tags, spawn_args, parent, created_by,
  type_revision, inbox_schemas, state_schemas, created_at, updated_at, write_token
