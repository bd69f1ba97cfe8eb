-- Queries of cron.go. Ticks are due, and a stream is still wanted, by coalesce($now,
-- now()): the store's clock, NULL (the database's own) outside tests.

-- name: EnsureCronStream
-- A cron stream ticking from $4 on; ensuring an existing one keeps its ticks (and their
-- numbers) and notes that someone still wants it, and restarts one that had stopped.
INSERT INTO cron_streams (path, expression, timezone, fire_at, ensured_at)
  VALUES ($1, $2, $3, $4, coalesce($5::timestamptz, now()))
  ON CONFLICT (path) DO UPDATE SET ensured_at = excluded.ensured_at,
    fire_at = CASE WHEN cron_streams.fire_at = 'infinity' THEN excluded.fire_at ELSE cron_streams.fire_at END

-- name: DueCronStreams
SELECT path FROM cron_streams WHERE fire_at <= coalesce($2::timestamptz, now()) ORDER BY fire_at, path LIMIT $1

-- name: NextCronDue
SELECT min(fire_at) FROM cron_streams WHERE fire_at < 'infinity'

-- name: LockCronStream
-- A due cron stream, unless another process is firing it; wanted says whether a cron
-- schedule of a live entity (status not in $3, the terminal ones) uses it or it was
-- ensured within the idle window ($2 seconds).
SELECT expression, timezone, next_tick, fire_at,
       ensured_at > coalesce($4::timestamptz, now()) - make_interval(secs => $2)
         OR EXISTS (SELECT 1 FROM cron_schedules c JOIN entity_statuses e ON e.url = c.entity_url
                     WHERE c.cron_path = $1 AND e.status <> ALL($3)) AS wanted
  FROM cron_streams WHERE path = $1 AND fire_at <= coalesce($4::timestamptz, now()) FOR UPDATE SKIP LOCKED

-- name: AdvanceCronStream
UPDATE cron_streams SET next_tick = $2, fire_at = $3 WHERE path = $1

-- name: DropCronStream
-- The stream is gone: ensuring it again starts a new one from tick 0.
DELETE FROM cron_streams WHERE path = $1

-- name: StopCronStream
-- Nobody wants it: it stops ticking, and keeps its tick number for when it is ensured
-- again (tick keys are never reused).
UPDATE cron_streams SET fire_at = 'infinity' WHERE path = $1

-- name: UpsertCronSchedule
INSERT INTO cron_schedules (entity_url, schedule_id, cron_path, created_by) VALUES ($1, $2, $3, $4)
  ON CONFLICT (entity_url, schedule_id) DO UPDATE SET cron_path = excluded.cron_path

-- name: DeleteCronSchedule
DELETE FROM cron_schedules WHERE entity_url = $1 AND schedule_id = $2

-- name: CountCronSchedulesBy
SELECT count(*) FROM (SELECT 1 FROM cron_schedules WHERE created_by = $1 LIMIT $2) n

-- name: HasCronSchedule
SELECT EXISTS (SELECT 1 FROM cron_schedules WHERE entity_url = $1 AND schedule_id = $2)
