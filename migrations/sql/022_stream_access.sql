-- Every stream's access is decided from what is recorded about it when it is created,
-- never from what else exists at the moment of a request (issue 24: deleting a type
-- made its entities' streams public).
--
-- Owned by streamdb: the access columns of streams.
--   access_kind     plain: its owner and the principals granted on it (stream_grants);
--                   entity: an entity's stream (entity_url), read with the entity's read
--                   permission and appended to with its write token only;
--                   wake: written by the server only (a runner's wake stream), read by
--                   its owner.
--   owner_principal the principal ("kind:id") that created the stream; NULL for the
--                   server's own streams and for plain streams created before this
--                   migration, which only privileged principals may then use.
--   entity_url      the entity whose stream this is (access_kind entity).
ALTER TABLE streams
    ADD COLUMN access_kind text NOT NULL DEFAULT 'plain' CHECK (access_kind IN ('plain', 'entity', 'wake')),
    ADD COLUMN owner_principal text,
    ADD COLUMN entity_url text;

UPDATE streams s SET access_kind = 'entity', entity_url = e.url
    FROM entities e WHERE e.stream_id = s.id;
UPDATE streams s SET access_kind = 'entity', entity_url = e.url
    FROM entities e WHERE s.path = e.url || '/slash-commands';
-- a runner's wake stream, unless it was pointed at an entity's stream (which stays the
-- entity's: wakes were appended into it, but it belongs to the entity)
UPDATE streams s SET access_kind = 'wake', owner_principal = r.owner_principal
    FROM runners r WHERE s.path = r.wake_stream AND s.access_kind = 'plain';

-- per-principal quotas count what a principal owns
CREATE INDEX streams_owner_idx ON streams (owner_principal) WHERE owner_principal IS NOT NULL;

-- Owned by authz: grants on plain streams. A grant names the stream by id, so a stream
-- deleted and created again at the same path does not inherit its predecessor's grants.
CREATE TABLE stream_grants (
    id            text        PRIMARY KEY,
    stream_id     bigint      NOT NULL REFERENCES streams (id) ON DELETE CASCADE,
    subject_kind  text        NOT NULL CHECK (subject_kind IN ('principal', 'principal_kind')),
    subject_value text        NOT NULL,
    permission    text        NOT NULL CHECK (permission IN ('read', 'write', 'delete', 'manage')),
    expires_at    timestamptz,
    created_by    text        NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX stream_grants_stream ON stream_grants (stream_id);
CREATE INDEX stream_grants_created_by ON stream_grants (created_by);
CREATE INDEX entity_grants_created_by ON entity_grants (created_by);
CREATE INDEX type_grants_created_by ON type_grants (created_by);

-- Owned by entity: who registered a type first. A runner a type dispatches to is bound
-- to this principal (or to the one its target names), so a runner registered by anyone
-- else never receives the type's wakes. Types registered before this migration take
-- the principal that was given manage on them at registration.
ALTER TABLE entity_types ADD COLUMN registered_by text;
UPDATE entity_types t SET registered_by = (
    SELECT g.subject_value FROM type_grants g
     WHERE g.type_name = t.name AND g.permission = 'manage' AND g.subject_kind = 'principal'
       AND g.created_by = g.subject_value
     ORDER BY g.created_at, g.id LIMIT 1);
CREATE INDEX entity_types_registered_by ON entity_types (registered_by) WHERE registered_by IS NOT NULL;

-- Owned by dssub: who created a subscription through the API (NULL for the ones
-- dispatch policies make), for the per-principal quota.
ALTER TABLE ds_subscriptions ADD COLUMN created_by text;
CREATE INDEX ds_subscriptions_created_by ON ds_subscriptions (created_by) WHERE created_by IS NOT NULL;
