-- name: MarkRunning
-- A remote handler's wake is delivered or claimed: an idle entity is running. Any other
-- status stays (paused, stopping and the ended ones are not woken; running already is).
UPDATE entities SET status = $2, updated_at = now() WHERE url = $1 AND status = $3

-- name: MarkWakeDone
-- A remote handler's wake is done: a running entity is idle again. Answers the status
-- the entity had before (no row: no such entity), so that a stopping one can be stopped.
WITH before AS (SELECT status FROM entities WHERE url = $1),
     idle AS (UPDATE entities SET status = $2, updated_at = now() WHERE url = $1 AND status = $3)
SELECT status FROM before
