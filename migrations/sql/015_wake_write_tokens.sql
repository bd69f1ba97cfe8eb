-- Owned by dssub: the write tokens claimed for webhook wakes (Electric's wake callbacks).
-- One per stream, replaced by every claim; only the hash is kept. A token writes while
-- the wake it was claimed for is the subscription's current one (same wake id and
-- generation): a later wake fences it without touching this table.
CREATE TABLE ds_write_tokens (
    stream_path     text PRIMARY KEY,
    token_hash      bytea NOT NULL,
    subscription_id text NOT NULL REFERENCES ds_subscriptions (id) ON DELETE CASCADE,
    wake_id         text NOT NULL,
    generation      bigint NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ds_write_tokens_subscription ON ds_write_tokens (subscription_id);

-- Wake callbacks name the wake, not the subscription.
CREATE INDEX ds_subscriptions_wake_id ON ds_subscriptions (wake_id) WHERE wake_id IS NOT NULL;
