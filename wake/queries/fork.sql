-- Queries of fork.go.

-- name: ForkScan
-- The delivery row of a fork's copy ($2, made by the entity row's trigger) starts where
-- its source's ($1) had scanned, and no further than the fork point $3: the history the
-- copy inherits is not new work for it. Steer messages already handed over stay so.
UPDATE entity_wake w SET scanned_seq = least(src.scanned_seq, $3),
    consumed = ARRAY(SELECT c FROM unnest(src.consumed) AS c WHERE c <= $3)
  FROM entity_wake src
  WHERE src.entity_url = $1 AND w.entity_url = $2

-- name: ForkHeld
-- Messages the source holds (sent paused) up to the fork point are held by the copy too.
INSERT INTO inbox_held (entity_url, key, seq, value)
  SELECT $2, key, seq, value FROM inbox_held WHERE entity_url = $1 AND seq <= $3
  ON CONFLICT DO NOTHING
