-- name: Sources
SELECT DISTINCT r.source_stream, h.id FROM wake_registrations r LEFT JOIN stream_heads h ON h.path = r.source_stream

-- name: Pending
-- Sources with work nobody took: messages past the cursor (or past a registration that
-- has no cursor yet), and due debounces and timeouts.
(SELECT s.source_stream FROM wake_sources s JOIN stream_heads h ON h.path = s.source_stream
 WHERE h.tail_seq > s.cursor_seq)
UNION
(SELECT r.source_stream FROM wake_registrations r JOIN stream_heads h ON h.path = r.source_stream
 WHERE h.tail_seq > r.from_seq
   AND NOT EXISTS (SELECT 1 FROM wake_sources s WHERE s.source_stream = r.source_stream))
UNION
(SELECT source_stream FROM wake_registrations
 WHERE (timeout_at IS NOT NULL OR debounce_due IS NOT NULL) AND least(timeout_at, debounce_due) <= now())
LIMIT 10000
