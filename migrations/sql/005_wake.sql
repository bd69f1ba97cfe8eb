-- Wakes: the durable state that lets Go handlers run exactly once per unit of work, one
-- at a time per entity, across any number of server processes.

-- One row per server process that runs handlers. A process renews its lease by heartbeat;
-- when the lease lapses, the entities it held may be claimed by others.
CREATE TABLE wake_holders (
    holder_id   text        PRIMARY KEY,
    lease_until timestamptz NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    hostname    text        NOT NULL DEFAULT ''
);

-- One row per entity. Every event of the entity's stream with seq <= scanned_seq has been
-- delivered to the handler (and acknowledged) or skipped. holder/epoch are the claim:
-- a claim increments epoch, and every acknowledgement is fenced by it, so a stale
-- holder's writes are refused.
CREATE TABLE entity_wake (
    entity_url  text        PRIMARY KEY REFERENCES entities (url),
    stream_id   bigint      NOT NULL,
    entity_type text        NOT NULL,
    scanned_seq bigint      NOT NULL DEFAULT 0,
    epoch       bigint      NOT NULL DEFAULT 0,
    holder      text,
    attempts    integer     NOT NULL DEFAULT 0,
    retry_at    timestamptz,
    last_error  text,
    -- steer messages handed to a running handler, to skip when the scan reaches them
    consumed    bigint[]    NOT NULL DEFAULT '{}',
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX entity_wake_holder_idx ON entity_wake (holder);
CREATE INDEX entity_wake_stream_idx ON entity_wake (stream_id);

-- Inbox messages sent with mode "paused": held until an inbox update releases them.
CREATE TABLE inbox_held (
    entity_url text   NOT NULL,
    key        text   NOT NULL,
    seq        bigint NOT NULL,
    value      jsonb  NOT NULL,
    PRIMARY KEY (entity_url, key)
);

-- Messages given up on after the configured number of attempts.
CREATE TABLE wake_failures (
    entity_url text        NOT NULL,
    seq        bigint      NOT NULL,
    kind       text        NOT NULL,
    key        text        NOT NULL,
    attempts   integer     NOT NULL,
    error      text        NOT NULL,
    failed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity_url, seq)
);

-- Timers set by handlers (ctx.Schedule). When due, a "wake" event is appended to the
-- entity's stream (deduplicated by timer id) and the timer is deleted.
CREATE TABLE wake_timers (
    id         text        PRIMARY KEY,
    entity_url text        NOT NULL,
    due_at     timestamptz NOT NULL,
    payload    jsonb,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX wake_timers_due_idx ON wake_timers (due_at);

-- Observations (ctx.Observe): events written to the source entity's stream by its
-- handler, and its lifecycle changes, wake the observer.
CREATE TABLE wake_observations (
    observer_url text   NOT NULL,
    source_url   text   NOT NULL,
    event_types  text[] NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (observer_url, source_url)
);
CREATE INDEX wake_observations_source_idx ON wake_observations (source_url);

INSERT INTO entity_wake (entity_url, stream_id, entity_type)
SELECT url, stream_id, type FROM entities ON CONFLICT DO NOTHING;
