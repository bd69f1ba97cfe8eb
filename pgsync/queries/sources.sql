-- Queries of sources.go.

-- name: UpsertSource
-- An observation; registering it again renews touched_at and keeps its start.
INSERT INTO pg_sync_sources (source_ref, stream_path, table_key, columns, replica, owner_principal, entity_url, options, start_lsn)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, pg_current_wal_lsn())
  ON CONFLICT (source_ref) DO UPDATE SET touched_at = now()

-- name: SourcesOf
-- The observations of the tables $1 ("schema.table").
SELECT source_ref, stream_path, table_key, columns, replica, start_lsn::text
  FROM pg_sync_sources WHERE table_key = ANY($1::text[])

-- name: DeleteSource
DELETE FROM pg_sync_sources WHERE source_ref = $1

-- name: CountSources
SELECT count(*) FROM pg_sync_sources

-- name: CountSourcesBy
SELECT count(*) FROM (SELECT 1 FROM pg_sync_sources WHERE owner_principal = $1 LIMIT $2) n

-- name: DropIdleSources
-- Observations nobody registered again within $1 seconds.
DELETE FROM pg_sync_sources WHERE touched_at < now() - make_interval(secs => $1)
