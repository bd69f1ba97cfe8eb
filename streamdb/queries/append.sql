-- name: LockStreams :many
-- Locks the streams a group of appends touches, in id order (so that two lanes never
-- wait on each other).
SELECT sqlc.embed(s), coalesce(src.path, '')::text AS fork_source_path
  FROM streams s LEFT JOIN streams src ON src.id = s.fork_source_id
  WHERE s.path = ANY(@paths::text[]) ORDER BY s.id FOR UPDATE OF s;

-- name: SelectProducers :many
-- The producer rows of (paths[i], producer_ids[i]). Here and below, arrays are unnested
-- one per column in a select list, which Postgres zips row by row as it does
-- unnest(a, b, ...) (sqlc knows only the one-array unnest).
SELECT p.stream_id, p.producer_id, p.epoch, p.last_seq
  FROM (SELECT unnest(@paths::text[]) AS path, unnest(@producer_ids::text[]) AS pid) u
  JOIN streams s ON s.path = u.path
  JOIN stream_producers p ON p.stream_id = s.id AND p.producer_id = u.pid;

-- name: SelectDedupe :many
-- end_pos is where the first append's last message ended (-1 once retention removed it):
-- a retry is answered with the offset just after what it first appended.
SELECT d.stream_id, d.key, d.body_hash, d.ref, d.seq, coalesce(m.end_pos, -1)::bigint AS end_pos
  FROM (SELECT unnest(@paths::text[]) AS path, unnest(@keys::text[]) AS key) u
  JOIN streams s ON s.path = u.path
  JOIN stream_dedupe d ON d.stream_id = s.id AND d.key = u.key
  LEFT JOIN stream_messages m ON m.stream_id = d.stream_id AND m.seq = d.seq;

-- name: InsertMessages :exec
INSERT INTO stream_messages (stream_id, seq, end_pos, data)
  SELECT unnest(@stream_ids::bigint[]), unnest(@seqs::bigint[]), unnest(@end_positions::bigint[]),
    unnest(@data::bytea[]);

-- name: UpdateTails :exec
-- sqlc types a text[] as []string, whose elements cannot be NULL, so the nullable
-- columns travel as a flag or as the empty string: a stream seq is never empty (an
-- append without one leaves the stream's alone), and the closing producer's three
-- columns are set together, when closed_by.
UPDATE streams s SET tail_seq = u.tail_seq, tail_pos = u.tail_pos, closed = u.closed,
    closed_producer_id    = CASE WHEN u.closed_by THEN u.cp_id END,
    closed_producer_epoch = CASE WHEN u.closed_by THEN u.cp_epoch END,
    closed_producer_seq   = CASE WHEN u.closed_by THEN u.cp_seq END,
    last_stream_seq = nullif(u.lss, ''),
    -- only TTL streams track access: leaving the indexed column alone otherwise
    -- keeps this a HOT update (no index churn on the hottest row of the stream)
    last_access_at = CASE WHEN s.ttl_seconds IS NULL THEN s.last_access_at ELSE coalesce(sqlc.narg(now)::timestamptz, now()) END
  FROM (SELECT unnest(@ids::bigint[]) AS id, unnest(@tail_seqs::bigint[]) AS tail_seq,
      unnest(@tail_positions::bigint[]) AS tail_pos, unnest(@closed::bool[]) AS closed,
      unnest(@closed_by::bool[]) AS closed_by, unnest(@closer_ids::text[]) AS cp_id,
      unnest(@closer_epochs::bigint[]) AS cp_epoch, unnest(@closer_seqs::bigint[]) AS cp_seq,
      unnest(@last_stream_seqs::text[]) AS lss) u
  WHERE s.id = u.id;

-- name: UpsertProducers :exec
INSERT INTO stream_producers (stream_id, producer_id, epoch, last_seq, updated_at)
  SELECT u.stream_id, u.producer_id, u.epoch, u.last_seq, now()
  FROM (SELECT unnest(@stream_ids::bigint[]) AS stream_id, unnest(@producer_ids::text[]) AS producer_id,
      unnest(@epochs::bigint[]) AS epoch, unnest(@last_seqs::bigint[]) AS last_seq) u
  ON CONFLICT (stream_id, producer_id) DO UPDATE
  SET epoch = excluded.epoch, last_seq = excluded.last_seq, updated_at = now();

-- name: InsertDedupe :exec
INSERT INTO stream_dedupe (stream_id, key, body_hash, ref, seq)
  SELECT unnest(@stream_ids::bigint[]), unnest(@keys::text[]), unnest(@body_hashes::bytea[]),
    unnest(@refs::text[]), unnest(@seqs::bigint[]);
