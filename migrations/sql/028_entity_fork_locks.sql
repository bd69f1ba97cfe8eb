-- Forks under way (package entity, POST /_electric/entities/:type/:id/fork): one row per
-- entity of the subtree being forked, taken before the fork waits for the subtree to be
-- idle and removed in the transaction that copies it. Sends to an entity with a live row
-- are refused with 409 FORK_IN_PROGRESS (the send admission reads it), and a second fork
-- of the same entity finds the row and is refused too. The row is in Postgres, not in a
-- process, so every replica sees it; expires_at lets the rows of a crashed fork lapse.
CREATE TABLE entity_fork_locks (
    url        text PRIMARY KEY,
    fork_id    text NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX entity_fork_locks_fork ON entity_fork_locks (fork_id);
