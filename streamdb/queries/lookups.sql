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

-- name: DedupeHash :one
SELECT body_hash FROM stream_dedupe WHERE stream_id = @stream_id AND key = @key;

-- name: CountOwned :one
-- How many live plain and shared-state streams principal owner created, counted up to
-- max_count.
SELECT count(*) FROM (
  SELECT 1 FROM streams WHERE owner_principal = @owner::text AND access_kind IN ('plain', 'shared') AND NOT soft_deleted
  LIMIT @max_count::int8) owned;
