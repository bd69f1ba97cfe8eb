-- Issue 25: shared state, schedules, cron and tag observations (Electric's runtime uses
-- them unchanged).

-- Owned by streamdb: three more access kinds, each decided by api.decideStream.
--   shared   /_electric/shared-state/<id>: read and written by principals with read or
--            write on an entity linked to it (shared_state_links), bootstrapped by the
--            electric-owner-entity header on PUT and POST;
--   cron     /_cron/<spec>: read by any authenticated principal, written by the server;
--   members  /_entities/<ref>: a tag-membership stream, read by the principal it was
--            made for (owner_principal), written by the server.
ALTER TABLE streams DROP CONSTRAINT streams_access_kind_check;
ALTER TABLE streams ADD CONSTRAINT streams_access_kind_check
    CHECK (access_kind IN ('plain', 'entity', 'wake', 'shared', 'cron', 'members'));

-- Owned by authz: which entities a shared-state stream is linked to. A link names the
-- stream by id, so a shared state deleted and created again does not inherit links.
CREATE TABLE shared_state_links (
    stream_id    bigint      NOT NULL REFERENCES streams (id) ON DELETE CASCADE,
    entity_url   text        NOT NULL,
    created_by   text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (stream_id, entity_url)
);
CREATE INDEX shared_state_links_entity ON shared_state_links (entity_url);

-- Owned by inbox: a future_send schedule is a delayed send with an owner entity and a
-- manifest entry (schedule:<id>) on the owner's stream. Upserting the schedule replaces
-- the pending row; firing it writes the entry's status (sent/failed) in the same
-- transaction as the send.
ALTER TABLE delayed_sends
    ADD COLUMN owner_url    text,
    ADD COLUMN manifest_key text,
    -- the manifest entry as written when scheduled (json: content byte for byte)
    ADD COLUMN manifest     json,
    ADD COLUMN created_by   text;
CREATE UNIQUE INDEX delayed_sends_manifest_idx ON delayed_sends (owner_url, manifest_key)
    WHERE completed_at IS NULL AND owner_url IS NOT NULL;
CREATE INDEX delayed_sends_created_by_idx ON delayed_sends (created_by)
    WHERE completed_at IS NULL AND created_by IS NOT NULL;

-- Owned by schedule: cron streams and their next tick. Every server process fires due
-- ticks (FOR UPDATE SKIP LOCKED); a tick's event is keyed tick-<n>, so it is appended
-- once. A stream nobody schedules against and nobody ensured for a while stops ticking
-- (its row is deleted; ensuring it again starts it).
CREATE TABLE cron_streams (
    path         text        PRIMARY KEY,
    expression   text        NOT NULL,
    timezone     text        NOT NULL,
    next_tick    bigint      NOT NULL DEFAULT 0,
    fire_at      timestamptz NOT NULL,
    ensured_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX cron_streams_due ON cron_streams (fire_at);

-- Owned by schedule: cron schedules of entities (PUT …/schedules/:id, scheduleType cron).
CREATE TABLE cron_schedules (
    entity_url   text        NOT NULL,
    schedule_id  text        NOT NULL,
    cron_path    text        NOT NULL,
    created_by   text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity_url, schedule_id)
);
CREATE INDEX cron_schedules_path ON cron_schedules (cron_path);
CREATE INDEX cron_schedules_created_by ON cron_schedules (created_by);

-- Owned by membership: tag observations (/_entities/<ref>), one per (tags, principal),
-- and the members each stream currently shows (to write only what changed).
CREATE TABLE entity_observations (
    source_ref   text        PRIMARY KEY,
    stream_path  text        NOT NULL,
    tags         jsonb       NOT NULL,
    principal    text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    touched_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX entity_observations_principal ON entity_observations (principal);
CREATE TABLE observation_members (
    source_ref   text        NOT NULL REFERENCES entity_observations (source_ref) ON DELETE CASCADE,
    entity_url   text        NOT NULL,
    member       json        NOT NULL,
    PRIMARY KEY (source_ref, entity_url)
);
