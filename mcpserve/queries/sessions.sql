-- Queries of session_store.go: the MCP sessions that outlive their process.

-- name: SaveSession
INSERT INTO mcp_sessions (id, entity_url, principal, initialize) VALUES ($1, $2, $3, $4)
  ON CONFLICT (id) DO UPDATE SET last_seen_at = now()

-- name: LoadSession
SELECT entity_url, principal, initialize FROM mcp_sessions WHERE id = $1

-- name: ForgetSession
DELETE FROM mcp_sessions WHERE id = $1

-- name: TouchSessions
UPDATE mcp_sessions SET last_seen_at = now() WHERE id = ANY($1)

-- name: ExpireSessions
DELETE FROM mcp_sessions WHERE last_seen_at < now() - $1::interval
