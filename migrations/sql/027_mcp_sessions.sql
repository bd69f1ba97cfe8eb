-- MCP sessions outlive the process that opened them (package mcpserve): a server that
-- gets a request for a session it does not hold (it restarted, or the session was opened
-- on another replica) finds it here and opens it again under the same ID, with the
-- client's initialize parameters, for the same principal on the same entity. A row goes
-- when its session ends (DELETE, the idle timeout, the entity deleted), not when the
-- server stops; last_seen_at, refreshed by the holding server, lets abandoned rows expire.
CREATE TABLE mcp_sessions (
    id           text PRIMARY KEY,
    entity_url   text NOT NULL,
    principal    text NOT NULL,
    initialize   jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX mcp_sessions_last_seen ON mcp_sessions (last_seen_at);
