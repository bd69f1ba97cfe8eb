-- Delayed sends (POST .../send with afterMs > 0): validated when enqueued, appended to the
-- entity's inbox when due. A firing claims due rows with FOR UPDATE SKIP LOCKED and deletes
-- each in the transaction that appends it, so every row fires once across processes. A
-- row that can never fire (the entity ended, its key was reused) is kept with
-- completed_at and last_error for inspection.
CREATE TABLE delayed_sends (
    id           bigserial   PRIMARY KEY,
    entity_url   text        NOT NULL,
    fire_at      timestamptz NOT NULL,
    -- the send request (payload kept byte for byte: json, not jsonb)
    request      json        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    completed_at timestamptz,
    last_error   text
);
CREATE INDEX delayed_sends_due_idx ON delayed_sends (fire_at, id) WHERE completed_at IS NULL;
