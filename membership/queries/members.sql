-- Queries of membership.go.

-- name: UpsertObservation
INSERT INTO entity_observations (source_ref, stream_path, tags, principal) VALUES ($1, $2, $3, $4)
  ON CONFLICT (source_ref) DO UPDATE SET touched_at = now()

-- name: LockObservation
SELECT stream_path, tags::text, principal FROM entity_observations WHERE source_ref = $1 FOR UPDATE

-- name: ListObservations
SELECT source_ref FROM entity_observations ORDER BY source_ref LIMIT $1

-- name: ObservationsOf
-- The observations whose tags entity tags $1 carry.
SELECT source_ref FROM entity_observations WHERE $1::jsonb @> tags ORDER BY source_ref LIMIT $2

-- name: MembersOf
SELECT entity_url, member::text FROM observation_members WHERE source_ref = $1

-- name: MemberOf
SELECT member::text FROM observation_members WHERE source_ref = $1 AND entity_url = $2

-- name: UpsertMember
INSERT INTO observation_members (source_ref, entity_url, member) VALUES ($1, $2, $3)
  ON CONFLICT (source_ref, entity_url) DO UPDATE SET member = excluded.member

-- name: DeleteMember
DELETE FROM observation_members WHERE source_ref = $1 AND entity_url = $2

-- name: CountObservationsOf
SELECT count(*) FROM (SELECT 1 FROM entity_observations WHERE principal = $1 LIMIT $2) n

-- name: ObservationTags
SELECT tags::text FROM entity_observations WHERE source_ref = $1

-- name: FormerObservations
-- The observations entity $1 is a member of.
SELECT source_ref FROM observation_members WHERE entity_url = $1 LIMIT $2
