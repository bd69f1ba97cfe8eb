-- name: PurgeDedupe :execrows
DELETE FROM stream_dedupe WHERE ctid = ANY(ARRAY(
  SELECT ctid FROM stream_dedupe WHERE created_at < now() - @max_age::interval LIMIT @max_rows::int8));
