-- Queries of append.go.

-- name: SelectProducers
SELECT p.stream_id, p.producer_id, p.epoch, p.last_seq
  FROM unnest($1::text[], $2::text[]) AS u(path, pid)
  JOIN streams s ON s.path = u.path
  JOIN stream_producers p ON p.stream_id = s.id AND p.producer_id = u.pid

-- name: SelectDedupe
SELECT d.stream_id, d.key, d.body_hash, d.ref, d.seq
  FROM unnest($1::text[], $2::text[]) AS u(path, key)
  JOIN streams s ON s.path = u.path
  JOIN stream_dedupe d ON d.stream_id = s.id AND d.key = u.key

-- name: InsertMessages
INSERT INTO stream_messages (stream_id, seq, end_pos, data)
  SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bytea[])

-- name: UpdateTails
UPDATE streams s SET tail_seq = u.tail_seq, tail_pos = u.tail_pos, closed = u.closed,
    closed_producer_id = u.cp_id, closed_producer_epoch = u.cp_epoch, closed_producer_seq = u.cp_seq,
    last_stream_seq = u.lss,
    -- only TTL streams track access: leaving the indexed column alone otherwise
    -- keeps this a HOT update (no index churn on the hottest row of the stream)
    last_access_at = CASE WHEN s.ttl_seconds IS NULL THEN s.last_access_at ELSE coalesce($9::timestamptz, now()) END
  FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bool[], $5::text[], $6::bigint[], $7::bigint[], $8::text[])
    AS u(id, tail_seq, tail_pos, closed, cp_id, cp_epoch, cp_seq, lss)
  WHERE s.id = u.id

-- name: UpsertProducers
INSERT INTO stream_producers (stream_id, producer_id, epoch, last_seq, updated_at)
  SELECT u.stream_id, u.producer_id, u.epoch, u.last_seq, now()
  FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bigint[]) AS u(stream_id, producer_id, epoch, last_seq)
  ON CONFLICT (stream_id, producer_id) DO UPDATE
  SET epoch = excluded.epoch, last_seq = excluded.last_seq, updated_at = now()

-- name: InsertDedupe
INSERT INTO stream_dedupe (stream_id, key, body_hash, ref, seq)
  SELECT * FROM unnest($1::bigint[], $2::text[], $3::bytea[], $4::text[], $5::bigint[])

-- name: LockStreams
SELECT {{meta}}
  WHERE s.path = ANY($1) ORDER BY s.id FOR UPDATE OF s
