-- Owned by dssub: a claimed write token belongs to a wake, not to one stream. It writes
-- to every stream the wake lists, while that wake is the subscription's current one.
-- (015 keyed tokens by stream, and a claim recomputed "the primary stream" from tails
-- that had moved since the wake began, so a handler's token could name another stream
-- than the one its wake announced.) Tokens live only as long as a wake: none are kept.
DROP TABLE ds_write_tokens;
CREATE TABLE ds_write_tokens (
    subscription_id text PRIMARY KEY REFERENCES ds_subscriptions (id) ON DELETE CASCADE,
    token_hash      bytea NOT NULL UNIQUE,
    wake_id         text NOT NULL,
    generation      bigint NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);
