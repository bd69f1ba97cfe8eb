-- Queries of status.go.

-- name: StatusOf
SELECT w.scanned_seq, w.holder, w.epoch, w.attempts, w.retry_at, w.last_error,
    w.holder IS NOT NULL AND EXISTS (SELECT 1 FROM wake_holders h WHERE h.holder_id = w.holder AND h.lease_until > now()),
    (SELECT count(*) FROM inbox_held i WHERE i.entity_url = w.entity_url)
  FROM entity_wake w WHERE w.entity_url = $1

-- name: FailuresOf
SELECT seq, kind, key, attempts, error, failed_at FROM wake_failures
  WHERE entity_url = $1 ORDER BY seq
