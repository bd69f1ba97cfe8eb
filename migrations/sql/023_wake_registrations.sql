-- Electric's cross-entity wakes (package wakereg): a subscriber entity asks to be woken
-- by what is appended to a source (another entity's main stream, or a stream the server
-- writes: cron ticks, tag membership, shared state).
CREATE TABLE wake_registrations (
    id               bigserial PRIMARY KEY,
    subscriber_url   text NOT NULL,
    -- the source as the registration named it (an entity URL or a stream path), and
    -- the stream that is read for it
    source_url       text NOT NULL,
    source_stream    text NOT NULL,
    -- "runFinished" or {"on":"change","collections":[...],"ops":[...]}: identifiers only
    condition        jsonb NOT NULL,
    debounce_ms      integer NOT NULL DEFAULT 0,
    timeout_ms       integer NOT NULL DEFAULT 0,
    include_response boolean NOT NULL DEFAULT true,
    manifest_key     text NOT NULL DEFAULT '',
    one_shot         boolean NOT NULL DEFAULT false,
    -- the source stream's tail when the registration was made: only later messages match
    from_seq         bigint NOT NULL,
    from_pos         bigint NOT NULL,
    -- when a timeout wake is due (NULL: none, or already delivered or cancelled by a match)
    timeout_at       timestamptz,
    timeout_consumed boolean NOT NULL DEFAULT false,
    -- changes buffered by debounce_ms (content: json, kept byte for byte), the runFinished
    -- status among them, the source offset of the last, and when they are delivered
    debounce_changes json,
    debounce_status  text,
    debounce_key     text,
    debounce_due     timestamptz,
    created_by       text,
    created_at       timestamptz NOT NULL DEFAULT now()
);

CREATE UNIQUE INDEX wake_registrations_identity ON wake_registrations
    (subscriber_url, source_url, condition, debounce_ms, timeout_ms, one_shot, include_response, manifest_key);
CREATE INDEX wake_registrations_source ON wake_registrations (source_stream);
CREATE INDEX wake_registrations_manifest ON wake_registrations (subscriber_url, manifest_key);
CREATE INDEX wake_registrations_created_by ON wake_registrations (created_by);
CREATE INDEX wake_registrations_due ON wake_registrations (least(timeout_at, debounce_due))
    WHERE timeout_at IS NOT NULL OR debounce_due IS NOT NULL;

-- How far each source stream has been evaluated. Its row is the lock that serializes the
-- evaluations of one source across processes, and it moves in the transaction that
-- appends the wakes, so a message is evaluated exactly once. Append transactions never
-- lock these rows (they insert or delete registrations only), so the order evaluations
-- take locks in (source row, then subscriber streams by id, then registrations) cannot
-- meet a lane's (streams by id, then registrations) the other way round.
CREATE TABLE wake_sources (
    source_stream text PRIMARY KEY,
    cursor_seq    bigint NOT NULL,
    cursor_pos    bigint NOT NULL
);
