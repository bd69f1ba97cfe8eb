-- fragment: registrationColumns
id, subscriber_url, source_url, condition::text, debounce_ms, timeout_ms, include_response, one_shot,
from_seq, timeout_at, timeout_consumed, debounce_changes::text, coalesce(debounce_status, ''),
coalesce(debounce_key, ''), debounce_due

-- name: EnsureSource
-- The cursor of a source starts where its earliest registration did.
INSERT INTO wake_sources (source_stream, cursor_seq, cursor_pos)
SELECT source_stream, from_seq, from_pos FROM wake_registrations
WHERE source_stream = $1 ORDER BY from_seq LIMIT 1
ON CONFLICT DO NOTHING

-- name: SourceCursor
SELECT cursor_seq, cursor_pos FROM wake_sources WHERE source_stream = $1

-- name: LockSource
SELECT cursor_seq, cursor_pos FROM wake_sources WHERE source_stream = $1 FOR UPDATE

-- name: RegistrationsOf
SELECT {{registrationColumns}} FROM wake_registrations WHERE source_stream = $1 ORDER BY id

-- name: DeleteSource
DELETE FROM wake_sources WHERE source_stream = $1

-- name: MoveCursor
UPDATE wake_sources SET cursor_seq = $2, cursor_pos = $3 WHERE source_stream = $1

-- name: SaveState
UPDATE wake_registrations
SET timeout_at = $2, timeout_consumed = $3, debounce_changes = $4::json, debounce_status = nullif($5, ''),
    debounce_key = nullif($6, ''), debounce_due = $7
WHERE id = $1

-- name: DeleteRegistrations
DELETE FROM wake_registrations WHERE id = ANY($1::bigint[])

-- name: DeleteSubscriber
DELETE FROM wake_registrations WHERE subscriber_url = $1
