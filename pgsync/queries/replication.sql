-- Queries of replicator.go and catalog.go: the slot's progress, and Postgres's own
-- catalogs.

-- name: AppliedLSN
SELECT applied_lsn::text FROM pg_sync_state WHERE slot_name = $1

-- name: SaveAppliedLSN
INSERT INTO pg_sync_state (slot_name, applied_lsn) VALUES ($1, $2::pg_lsn)
  ON CONFLICT (slot_name) DO UPDATE SET applied_lsn = greatest(pg_sync_state.applied_lsn, excluded.applied_lsn), updated_at = now()

-- name: WalLevel
SELECT current_setting('wal_level')

-- name: MaxSlotWalKeepSize
-- In megabytes; -1 is unlimited.
SELECT current_setting('max_slot_wal_keep_size')

-- name: TableInfo
-- The table $1.$2 if it exists: whether updates and deletes can be replicated (a
-- primary key or a replica identity other than nothing), and its columns.
SELECT c.relreplident::text,
       EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary),
       coalesce((SELECT array_agg(a.attname::text ORDER BY a.attnum) FROM pg_attribute a
                  WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), '{}')
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p')

-- name: PublicationExists
SELECT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $1)

-- name: PublicationHasTable
SELECT EXISTS (SELECT 1 FROM pg_publication_tables WHERE pubname = $1 AND schemaname = $2 AND tablename = $3)

-- name: LockPublication
-- Serializes changes to the publication across processes (transaction-scoped).
SELECT pg_advisory_xact_lock(hashtext('entityd.pgsync.publication:' || $1))

-- name: TryLease
-- The replicator's lease: a session lock held on one connection while it streams.
SELECT pg_try_advisory_lock(hashtext('entityd.pgsync.slot:' || $1))

-- name: ReleaseLease
SELECT pg_advisory_unlock(hashtext('entityd.pgsync.slot:' || $1))

-- name: SlotInfo
-- The slot $1 of this database: its WAL status (reserved, extended, unreserved, lost)
-- and how many bytes of WAL it holds back.
SELECT coalesce(wal_status, ''), coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn), 0)::bigint, active
  FROM pg_replication_slots WHERE slot_name = $1 AND database = current_database()

-- name: DropSlot
SELECT pg_drop_replication_slot($1)

-- name: CurrentDatabase
SELECT current_database()
