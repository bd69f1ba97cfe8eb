-- Postgres tables as live sources (Electric's pgSync observations), served from the
-- database's own logical replication (package pgsync).
--
-- A pg-sync stream (/_electric/pg-sync/<ref>) is the server's: written by the
-- replicator only, read by the principal that registered the observation.
ALTER TABLE streams DROP CONSTRAINT streams_access_kind_check;
ALTER TABLE streams ADD CONSTRAINT streams_access_kind_check
    CHECK (access_kind IN ('plain', 'entity', 'wake', 'shared', 'cron', 'members', 'webhook', 'webhook_public', 'pgsync'));

-- Owned by pgsync: one row per observation (table, columns, replica mode, principal,
-- observing entity). start_lsn is the WAL position when it was first registered: only
-- changes committed after it go to its stream. touched_at is renewed by every
-- registration (the runtime registers on each wake); one nobody renewed for the idle
-- window is dropped.
CREATE TABLE pg_sync_sources (
    source_ref      text        PRIMARY KEY,
    stream_path     text        NOT NULL UNIQUE,
    table_key       text        NOT NULL, -- "schema.table", as the allow-list names it
    columns         text[],               -- NULL: every column
    replica         text        NOT NULL CHECK (replica IN ('default', 'full')),
    owner_principal text        NOT NULL,
    entity_url      text,
    options         jsonb       NOT NULL,
    start_lsn       pg_lsn      NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    touched_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX pg_sync_sources_table_idx ON pg_sync_sources (table_key);
CREATE INDEX pg_sync_sources_owner_idx ON pg_sync_sources (owner_principal);

-- Owned by pgsync: the replication slot's progress as the streams hold it. applied_lsn
-- is the end of the last replicated transaction whose changes are committed to the
-- streams, in the same transaction as those appends: a transaction Postgres sends again
-- (a crash before the slot was told, a replica switch) is skipped, never appended twice.
CREATE TABLE pg_sync_state (
    slot_name   text        PRIMARY KEY,
    applied_lsn pg_lsn      NOT NULL DEFAULT '0/0',
    updated_at  timestamptz NOT NULL DEFAULT now()
);
