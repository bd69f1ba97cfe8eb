-- name: LastEvent :one
SELECT data FROM stream_messages
  WHERE stream_id = @stream_id AND substring(data FROM 1 FOR @prefix_len::int4) = @prefix::bytea
  ORDER BY seq DESC LIMIT 1;

-- name: LastEventUpTo :one
-- LastEvent in the part of a fork source that the fork inherits (messages up to max_seq).
SELECT data FROM stream_messages
  WHERE stream_id = @stream_id AND seq <= @max_seq::int8
    AND substring(data FROM 1 FOR @prefix_len::int4) = @prefix::bytea
  ORDER BY seq DESC LIMIT 1;

-- name: MessagesContaining :many
-- The messages of one stream in (after_seq, to_seq] that contain one of needles, in order:
-- a scan for a few kinds of events that ships only those out of Postgres.
SELECT seq, data FROM stream_messages
  WHERE stream_id = @stream_id AND seq > @after_seq::int8 AND seq <= @to_seq::int8
    AND EXISTS (SELECT 1 FROM unnest(@needles::bytea[]) AS n WHERE position(n IN data) > 0)
  ORDER BY seq;

-- name: DedupeHash :one
SELECT body_hash FROM stream_dedupe WHERE stream_id = @stream_id AND key = @key;

-- name: CountOwned :one
-- How many live plain and shared-state streams principal owner created, counted up to
-- max_count.
SELECT count(*) FROM (
  SELECT 1 FROM streams WHERE owner_principal = @owner::text AND access_kind IN ('plain', 'shared') AND NOT soft_deleted
  LIMIT @max_count::int8) owned;
