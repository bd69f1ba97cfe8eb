-- Queries of observe.go.

-- name: Observe
INSERT INTO wake_observations (observer_url, source_url, event_types) VALUES ($1, $2, $3)
  ON CONFLICT (observer_url, source_url) DO UPDATE SET event_types = excluded.event_types

-- name: Unobserve
DELETE FROM wake_observations WHERE observer_url = $1 AND source_url = $2

-- name: ObserversOf
SELECT observer_url, event_types FROM wake_observations WHERE source_url = $1 ORDER BY observer_url

-- name: DeleteObservationsOf
DELETE FROM wake_observations WHERE observer_url = $1 OR source_url = $1
