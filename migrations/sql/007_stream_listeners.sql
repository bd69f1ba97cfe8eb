-- Server processes listening for stream notifications. A process whose commits no other
-- live process could hear skips the NOTIFY (which takes a database-wide lock at commit);
-- see streamdb/peers.go for how a newcomer is covered while the others learn about it.
CREATE TABLE stream_listeners (
    proc_id   text        PRIMARY KEY,
    last_seen timestamptz NOT NULL DEFAULT now()
);
