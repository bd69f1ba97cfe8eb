-- Issue 29: webhook sources. Outside services (a GitHub repository's webhook) POST signed
-- deliveries to /_electric/webhook-deliveries/<endpointKey>[/<bucket>]; each verified,
-- new delivery becomes one webhook_event in the stream /_webhooks/<endpointKey>[/<bucket>],
-- which Electric's runtime observes and which wakes the subscribed entities.

-- Owned by streamdb: two more access kinds, each decided by api.decideStream.
--   webhook         /_webhooks/<endpointKey>[/...] of a private source: read by the
--                   source's owner (owner_principal), written by the server only;
--   webhook_public  the same for a public source: read by any authenticated principal.
ALTER TABLE streams DROP CONSTRAINT streams_access_kind_check;
ALTER TABLE streams ADD CONSTRAINT streams_access_kind_check
    CHECK (access_kind IN ('plain', 'entity', 'wake', 'shared', 'cron', 'members', 'webhook', 'webhook_public'));

-- Owned by webhooksrc: the sources. The secret verifies deliveries and is never answered
-- by any GET; visibility is fixed at creation (it is recorded on the source's streams).
CREATE TABLE webhook_sources (
    webhook_key     text        PRIMARY KEY,
    endpoint_key    text        NOT NULL UNIQUE,
    owner_principal text        NOT NULL,
    label           text        NOT NULL,
    description     text,
    scheme          text        NOT NULL CHECK (scheme IN ('github', 'standard-webhooks')),
    secret          bytea       NOT NULL,
    status          text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled', 'revoked')),
    agent_visible   boolean     NOT NULL DEFAULT true,
    public          boolean     NOT NULL DEFAULT false,
    buckets         jsonb       NOT NULL DEFAULT '[]',
    revision        integer     NOT NULL DEFAULT 1,
    -- bucket streams made for it (by subscriptions and deliveries), bounded per source
    bucket_streams  integer     NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_sources_owner_idx ON webhook_sources (owner_principal);
CREATE INDEX webhook_sources_public_idx ON webhook_sources (webhook_key) WHERE public;
