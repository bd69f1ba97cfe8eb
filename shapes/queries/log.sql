-- Queries of log.go.

-- name: Horizon
-- The oldest transaction still running: changes of older transactions are final.
SELECT pg_snapshot_xmin(pg_current_snapshot())::text

-- name: Snapshot
-- The first statement of a snapshot's repeatable-read transaction: the snapshot it reads
-- at, "xmin:xmax:xip,…".
SELECT pg_current_snapshot()::text

-- name: State
SELECT epoch, trimmed_txid::text FROM shape_state

-- name: ChangesSince
-- The final changes of one relation after position ($2, $3), in order, but those of
-- the transactions below $5 not listed in $6: the client's snapshot saw them (its rows
-- hold them already). The ORDER BY names the table's columns: a bare "txid" would be
-- the text output column, sorted as text ("10" before "9") and by a scan of the whole
-- log instead of its index.
SELECT l.txid::text AS txid_text, l.id, l.key, l.operation, l.value::text FROM shape_log l
  WHERE l.relation = $1 AND (l.txid, l.id) > ($2::text::xid8, $3)
    AND l.txid < pg_snapshot_xmin(pg_current_snapshot())
    AND NOT (l.txid < $5::text::xid8 AND l.txid <> ALL ($6::text[]::xid8[]))
  ORDER BY l.txid, l.id
  LIMIT $4

-- name: PageChanges
-- In the repeatable-read transaction of a snapshot page: the changes of one relation's
-- rows up to key $2 (served by the pages before) that this transaction sees and the
-- previous page's snapshot (xmin $3, xmax $4, running $5) did not, in order. Every
-- change it sees is final: its transaction ended before the snapshot.
SELECT l.txid::text AS txid_text, l.id, l.key, l.operation, l.value::text FROM shape_log l
  WHERE l.relation = $1 AND l.key <= $2 AND l.txid >= $3::text::xid8
    AND NOT (l.txid < $4::text::xid8 AND l.txid <> ALL ($5::text[]::xid8[]))
  ORDER BY l.txid, l.id

-- name: Frontier
-- The last final change: a waiter looks again when it moves.
SELECT coalesce((SELECT txid::text || '_' || id FROM shape_log
  WHERE txid < pg_snapshot_xmin(pg_current_snapshot())
  ORDER BY txid DESC, id DESC LIMIT 1), '')

-- name: EntityRows
-- A page of a snapshot: the rows after key $1 ('' for the first page). snapshotPage adds
-- the conditions it pushes down (on key, type, status), then ORDER BY key LIMIT.
SELECT key, value::text FROM entity_shape_rows WHERE key > $1

-- name: EntityTypeRows
SELECT key, value::text FROM entity_type_shape_rows WHERE key > $1

-- name: RunnerRows
SELECT key, value::text FROM runner_shape_rows WHERE key > $1

-- name: RunnerDiagnosticsRows
SELECT key, value::text FROM runner_diagnostics_shape_rows WHERE key > $1

-- name: UserRows
SELECT key, value::text FROM user_shape_rows WHERE key > $1

-- name: EntityPermissionRows
SELECT key, value::text FROM entity_permission_shape_rows WHERE key > $1

-- name: TrimLog
-- Retention: drop up to 10,000 changes older than $1, remembering the newest
-- transaction dropped (a client at or before it must start again).
WITH gone AS (
  DELETE FROM shape_log WHERE id = ANY(ARRAY(
    SELECT id FROM shape_log WHERE at < now() - $1::interval
      AND txid < pg_snapshot_xmin(pg_current_snapshot())
    ORDER BY id LIMIT 10000))
  RETURNING txid),
noted AS (
  UPDATE shape_state SET trimmed_txid = greatest(trimmed_txid, (SELECT max(txid) FROM gone))
    WHERE EXISTS (SELECT 1 FROM gone)
  RETURNING 1)
SELECT count(*) FROM gone, (SELECT count(*) FROM noted) AS n
