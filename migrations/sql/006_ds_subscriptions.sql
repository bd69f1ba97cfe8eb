-- Durable Streams subscriptions: the protocol's reserved /v1/stream/__ds/ APIs (webhook
-- and pull-wake), owned by package dssub. Every process serves every subscription: the
-- state below is the only truth, and each change of a subscription's wake happens under
-- its row lock.

-- One row per subscription: its configuration, and the wake in flight (at most one).
-- A wake gets the next generation and a fresh wake_id; callbacks, acks and releases are
-- fenced by both. phase says where the wake stands:
--   NULL        no wake
--   delivering  webhook: not yet accepted by the receiver (attempt_owner is the process
--               POSTing it until attempt_until; next_attempt_at is the next retry)
--   open        webhook: accepted, waiting for callbacks until lease_until;
--               pull-wake: announced on the wake stream, not claimed
--   claimed     pull-wake: held by holder until lease_until
-- due_at is when a scheduler must look at the row next (a retry, an expired attempt or
-- lease, or work found by a reconciliation); NULL when nothing is scheduled.
CREATE TABLE ds_subscriptions (
    id              text        PRIMARY KEY,
    type            text        NOT NULL CHECK (type IN ('webhook', 'pull-wake')),
    pattern         text,
    webhook_url     text,
    wake_stream     text,
    lease_ttl_ms    integer     NOT NULL,
    description     text,
    -- hash of the configuration as created: an identical PUT is a 200, another a 409
    config_hash     bytea       NOT NULL,
    -- origin of the request that created the subscription (callback URLs point there
    -- unless the server is configured with a public URL)
    base_url        text        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    status          text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'failed')),
    generation      bigint      NOT NULL DEFAULT 0,
    wake_id         text,
    phase           text        CHECK (phase IN ('delivering', 'open', 'claimed')),
    holder          text,
    lease_until     timestamptz,
    retry_count     integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz,
    attempt_owner   text,
    attempt_until   timestamptz,
    last_error      text,
    due_at          timestamptz
);
CREATE INDEX ds_subscriptions_due_idx ON ds_subscriptions (due_at) WHERE due_at IS NOT NULL;

-- The streams of a subscription (paths relative to /v1/stream/): linked explicitly, by
-- the pattern, or both. acked is the consumer's cursor (seq -1 = "-1", before the first
-- message); stream_id is the incarnation of the stream it refers to (NULL: the stream did
-- not exist when linked), so that a deleted and re-created stream starts over. wake_* is
-- the tail the current wake told the consumer about (what a synchronous done acks).
CREATE TABLE ds_subscription_streams (
    subscription_id text    NOT NULL REFERENCES ds_subscriptions (id) ON DELETE CASCADE,
    path            text    NOT NULL,
    explicit        boolean NOT NULL DEFAULT false,
    glob            boolean NOT NULL DEFAULT false,
    stream_id       bigint,
    acked_seq       bigint  NOT NULL,
    acked_pos       bigint  NOT NULL,
    wake_seq        bigint,
    wake_pos        bigint,
    PRIMARY KEY (subscription_id, path)
);
CREATE INDEX ds_subscription_streams_explicit_idx ON ds_subscription_streams (subscription_id) WHERE explicit;

-- Key material shared by every process: the Ed25519 key that signs webhook requests
-- (published at /v1/stream/__ds/jwks.json) and the HMAC key of callback and claim tokens.
-- The newest key of each kind that is not retired signs; every unretired key verifies.
CREATE TABLE ds_keys (
    kid        text        PRIMARY KEY,
    kind       text        NOT NULL CHECK (kind IN ('ed25519', 'hmac')),
    secret     bytea       NOT NULL,
    public_key bytea,
    created_at timestamptz NOT NULL DEFAULT now(),
    retired_at timestamptz
);

-- version is bumped by every change of subscriptions, their explicit streams or keys, so
-- that processes reload the patterns they match commits against. scanned_stream_id is
-- how far the reconciliation has looked for new streams that match a pattern.
CREATE TABLE ds_state (
    id                boolean PRIMARY KEY DEFAULT true CHECK (id),
    version           bigint  NOT NULL DEFAULT 0,
    scanned_stream_id bigint  NOT NULL DEFAULT 0
);
INSERT INTO ds_state (version, scanned_stream_id) SELECT 0, coalesce(max(id), 0) FROM streams;
