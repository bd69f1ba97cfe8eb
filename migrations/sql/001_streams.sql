-- Durable Streams storage. One row per stream, one row per stored message.
--
-- Offsets are "<seq>_<pos>" (16 zero-padded digits each): seq numbers the stored messages
-- of a stream without gaps (1, 2, 3, ...), pos is the byte position after the message.
-- A fork shares its source's offset space: it inherits source messages with
-- seq <= fork_seq and stores its own from fork_seq + 1 on.
CREATE TABLE streams (
    id                    bigserial PRIMARY KEY,
    path                  text        NOT NULL UNIQUE,
    content_type          text        NOT NULL,
    tail_seq              bigint      NOT NULL DEFAULT 0,
    tail_pos              bigint      NOT NULL DEFAULT 0,
    closed                boolean     NOT NULL DEFAULT false,
    -- the producer tuple whose append closed the stream, so its retry is answered 204
    closed_producer_id    text,
    closed_producer_epoch bigint,
    closed_producer_seq   bigint,
    last_stream_seq       text,
    ttl_seconds           bigint,
    expires_at            timestamptz,
    last_access_at        timestamptz NOT NULL DEFAULT now(),
    fork_source_id        bigint REFERENCES streams (id),
    fork_seq              bigint      NOT NULL DEFAULT 0,
    fork_pos              bigint      NOT NULL DEFAULT 0,
    fork_offset           text,
    fork_sub_offset       bigint,
    -- live forks that read through this stream; a referenced stream is only soft-deleted
    refcount              integer     NOT NULL DEFAULT 0,
    soft_deleted          boolean     NOT NULL DEFAULT false,
    created_at            timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX streams_expiry_idx ON streams (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX streams_ttl_idx ON streams (last_access_at) WHERE ttl_seconds IS NOT NULL;
CREATE INDEX streams_fork_source_idx ON streams (fork_source_id) WHERE fork_source_id IS NOT NULL;

-- No foreign key to streams: the append path is the hottest statement in the server and
-- stream deletion removes messages explicitly in the same transaction.
CREATE TABLE stream_messages (
    stream_id bigint NOT NULL,
    seq       bigint NOT NULL,
    end_pos   bigint NOT NULL,
    data      bytea  NOT NULL,
    PRIMARY KEY (stream_id, seq)
);

-- Idempotent producers (Producer-Id / Producer-Epoch / Producer-Seq), written in the same
-- transaction as the append they admit.
CREATE TABLE stream_producers (
    stream_id   bigint      NOT NULL,
    producer_id text        NOT NULL,
    epoch       bigint      NOT NULL,
    last_seq    bigint      NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (stream_id, producer_id)
);

-- Keyed appends: a caller-chosen key per stream that makes a retried append a no-op.
-- The entity send path uses it for its idempotency key. body_hash tells a true retry
-- (same request) from a reuse of the key for a different request.
CREATE TABLE stream_dedupe (
    stream_id  bigint      NOT NULL,
    key        text        NOT NULL,
    body_hash  bytea       NOT NULL,
    ref        text        NOT NULL,
    seq        bigint      NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (stream_id, key)
);
