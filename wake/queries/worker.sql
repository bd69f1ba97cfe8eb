-- Queries of worker.go.

-- name: LoadState
SELECT e.status, w.scanned_seq, w.attempts, w.retry_at, w.consumed, w.epoch, coalesce(w.holder, '')
  FROM entity_statuses e JOIN entity_wake w ON w.entity_url = e.url WHERE e.url = $1

-- name: HeldMessages
SELECT key, seq, value FROM inbox_held WHERE entity_url = $1
