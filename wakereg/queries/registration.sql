-- name: Insert
-- A registration starts at the source stream's tail (only later messages match); a
-- timeout is due timeout_ms after it is made. An identical registration is kept as it is.
INSERT INTO wake_registrations (subscriber_url, source_url, source_stream, condition, debounce_ms, timeout_ms,
        include_response, manifest_key, one_shot, from_seq, from_pos, timeout_at, created_by)
SELECT $1, $2, $3, $4::jsonb, $5, $6, $7, $8, $9,
       coalesce(h.tail_seq, 0), coalesce(h.tail_pos, 0),
       CASE WHEN $6::integer > 0 THEN now() + make_interval(secs => $6::integer / 1000.0) END, nullif($10, '')
FROM (SELECT 1) one LEFT JOIN stream_heads h ON h.path = $3
ON CONFLICT DO NOTHING

-- name: DeleteManifestOthers
-- A manifest entry written again replaces the registrations of its key, except one that
-- is exactly what it asks for (which keeps its place in the source and its timers).
DELETE FROM wake_registrations
WHERE subscriber_url = $1 AND manifest_key = $2
  AND NOT (source_url = $3 AND condition = $4::jsonb AND debounce_ms = $5 AND timeout_ms = $6
           AND include_response = $7 AND NOT one_shot)

-- name: DeleteManifest
DELETE FROM wake_registrations WHERE subscriber_url = $1 AND manifest_key = $2

-- name: DeleteSubscriberSource
DELETE FROM wake_registrations WHERE subscriber_url = $1 AND source_url = $2

-- name: DeleteEntity
-- An entity that is killed or stopped neither subscribes nor is a source any more.
DELETE FROM wake_registrations WHERE subscriber_url = $1 OR source_url = $1

-- name: CountCreatedBy
SELECT count(*) FROM (SELECT 1 FROM wake_registrations WHERE created_by = $1 LIMIT $2) mine

-- name: CopyForFork
-- The registrations whose subscribers are forked ($1, in order with their copies $2) for
-- the copies: a source forked along names its copy and starts at the copy's tail; another
-- source keeps its place. Debounced changes under way stay with the originals.
INSERT INTO wake_registrations (subscriber_url, source_url, source_stream, condition, debounce_ms, timeout_ms,
        include_response, manifest_key, one_shot, from_seq, from_pos, timeout_at, timeout_consumed, created_by)
SELECT s.to_url, coalesce(src.to_url, w.source_url),
       CASE WHEN src.to_url IS NULL THEN w.source_stream ELSE src.to_url || '/main' END,
       w.condition, w.debounce_ms, w.timeout_ms, w.include_response, w.manifest_key, w.one_shot,
       CASE WHEN src.to_url IS NULL THEN w.from_seq ELSE coalesce(h.tail_seq, 0) END,
       CASE WHEN src.to_url IS NULL THEN w.from_pos ELSE coalesce(h.tail_pos, 0) END,
       w.timeout_at, w.timeout_consumed, coalesce(nullif($3, ''), w.created_by)
FROM wake_registrations w
JOIN unnest($1::text[], $2::text[]) AS s(from_url, to_url) ON w.subscriber_url = s.from_url
LEFT JOIN unnest($1::text[], $2::text[]) AS src(from_url, to_url) ON w.source_url = src.from_url
LEFT JOIN stream_heads h ON h.path = src.to_url || '/main'
ON CONFLICT DO NOTHING
