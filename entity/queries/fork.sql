-- Queries of fork.go.

-- name: ForkSubtree
-- The entity at $1 and its descendants, parents before children, at most $2 of them
-- (the caller asks for one more than it allows, to tell a subtree that is too large).
-- The LIMIT outside the recursive query stops the walk once it has enough rows.
WITH RECURSIVE t(url, depth) AS (
    SELECT url, 0 FROM entities WHERE url = $1
  UNION ALL
    SELECT e.url, t.depth + 1 FROM entities e JOIN t ON e.parent = t.url
), s AS (SELECT url, depth FROM t LIMIT $2)
SELECT {{entityColumns}} FROM entities JOIN s USING (url)
  ORDER BY s.depth, entities.created_at, url

-- name: LockForkSubtree
-- The rows of the subtree, locked for the copy (in URL order, as every fork takes them).
SELECT {{entityColumns}} FROM entities WHERE url = ANY($1::text[]) ORDER BY url FOR UPDATE

-- name: TakeForkLocks
-- Marks the subtree as being forked by fork $2 until now + $3 ms. A live row of another
-- fork is left as it is and its URL not returned; a lapsed one, or this fork's own (a
-- fork that waits again takes its rows anew), is taken over.
INSERT INTO entity_fork_locks (url, fork_id, expires_at)
  SELECT u, $2, now() + $3::bigint * interval '1 millisecond' FROM unnest($1::text[]) AS u
  ON CONFLICT (url) DO UPDATE SET fork_id = excluded.fork_id, expires_at = excluded.expires_at
    WHERE entity_fork_locks.expires_at <= now() OR entity_fork_locks.fork_id = excluded.fork_id
  RETURNING url

-- name: ReleaseForkLocks
DELETE FROM entity_fork_locks WHERE fork_id = $1

-- name: InsertForkedEntity
-- The copy of entity $1 at $2: its type, type revision, schema snapshots, commands
-- revision and dispatch policy as they are; a new stream, write token, tags, args (with
-- the URLs of the forked subtree mapped to their copies), parent and creator; status idle.
INSERT INTO entities (url, type, instance_id, status, stream_id, write_token, tags, spawn_args,
    parent, created_by, type_revision, inbox_schemas, state_schemas, commands_revision, dispatch_policy)
  SELECT $2, type, $3, 'idle', $4, $5, $6, coalesce($9::json, spawn_args), $7, $8, type_revision, inbox_schemas,
    state_schemas, commands_revision, dispatch_policy
  FROM entities WHERE url = $1
  ON CONFLICT (url) DO NOTHING RETURNING {{entityColumns}}
