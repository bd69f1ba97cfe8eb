-- Owned by remote: pull-wake runners (Electric's /_electric/runners), handlers that
-- cannot receive inbound HTTP. Each has a wake stream its pull-wake subscription
-- announces wakes on, an admin switch, and a liveness lease kept by heartbeats.
CREATE TABLE runners (
    id                text        PRIMARY KEY,
    label             text        NOT NULL,
    owner_principal   text        NOT NULL,
    kind              text        NOT NULL DEFAULT 'local'
        CHECK (kind IN ('local', 'cloud-worker', 'sandbox', 'ci', 'server')),
    admin_status      text        NOT NULL DEFAULT 'enabled' CHECK (admin_status IN ('enabled', 'disabled')),
    wake_stream       text        NOT NULL UNIQUE,
    sandbox_profiles  json        NOT NULL DEFAULT '[]',
    lease_until       timestamptz,
    last_heartbeat_at timestamptz,
    wake_stream_offset text,
    diagnostics       json,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX runners_owner ON runners (owner_principal);
