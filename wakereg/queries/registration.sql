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
