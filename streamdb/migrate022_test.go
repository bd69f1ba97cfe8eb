package streamdb_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/streamdb"
)

// TestMigration022RecordsWhoDecidesAboutEachStream: streams written before access was
// recorded are classified by what they are: an entity's main and collection streams
// become its own, a runner's wake stream its owner's (unless it pointed at an entity's
// stream, which stays the entity's), everything else a plain stream of no one's (for
// privileged principals only); types take their registrant from the manage grant the
// registration made.
func TestMigration022RecordsWhoDecidesAboutEachStream(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.URL(t)
	const schema = "legacy22"
	pgtest.MigrateSchemaTo(t, ctx, dsn, schema, 21)
	pool := pgtest.SchemaPool(t, ctx, dsn, schema)
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := pool.Exec(ctx, sql, args...)
		require.NoError(t, err, sql)
	}
	stream := func(path string) int64 {
		t.Helper()
		var id int64
		require.NoError(t, pool.QueryRow(ctx, `INSERT INTO streams (path, content_type) VALUES ($1, 'application/json') RETURNING id`,
			path).Scan(&id))
		return id
	}
	exec(`INSERT INTO entity_types (name, description) VALUES ('vault', 'd'), ('old', 'd')`)
	exec(`INSERT INTO type_grants (id, type_name, subject_kind, subject_value, permission, created_by)
		VALUES ('g1', 'vault', 'principal', 'user:alice', 'spawn', 'user:alice'),
		       ('g2', 'vault', 'principal', 'user:alice', 'manage', 'user:alice'),
		       ('g3', 'vault', 'principal', 'user:bob', 'manage', 'user:alice')`)
	main := stream("/vault/v1/main")
	stream("/vault/v1/slash-commands")
	exec(`INSERT INTO entities (url, type, instance_id, status, stream_id, write_token, type_revision)
		VALUES ('/vault/v1', 'vault', 'v1', 'idle', $1, 'tok', 1)`, main)
	stream("/runners/alr/wake")
	exec(`INSERT INTO runners (id, label, owner_principal, wake_stream) VALUES ('alr', 'alr', 'user:alice', '/runners/alr/wake'),
		('bobr', 'bobr', 'user:bob', '/vault/v1/main')`)
	stream("/notes/a")

	pgtest.MigrateSchemaTo(t, ctx, dsn, schema, pgtest.LatestVersion(t))
	store, err := streamdb.Open(ctx, pool, streamdb.Options{})
	require.NoError(t, err)
	defer store.Close()
	access := func(path string) streamdb.Access {
		t.Helper()
		m, err := store.Lookup(ctx, path)
		require.NoError(t, err, path)
		return m.Access
	}
	require.Equal(t, streamdb.Access{Kind: streamdb.AccessEntity, Entity: "/vault/v1"}, access("/vault/v1/main"),
		"an entity's stream stays the entity's, though a runner named it as its wake stream")
	require.Equal(t, streamdb.Access{Kind: streamdb.AccessEntity, Entity: "/vault/v1"}, access("/vault/v1/slash-commands"))
	require.Equal(t, streamdb.Access{Kind: streamdb.AccessWake, Owner: "user:alice"}, access("/runners/alr/wake"))
	require.Equal(t, streamdb.Access{Kind: streamdb.AccessPlain}, access("/notes/a"), "no recorded owner")

	var vault, old *string
	require.NoError(t, pool.QueryRow(ctx, `SELECT (SELECT registered_by FROM entity_types WHERE name = 'vault'),
		(SELECT registered_by FROM entity_types WHERE name = 'old')`).Scan(&vault, &old))
	require.NotNil(t, vault)
	require.Equal(t, "user:alice", *vault, "the registrant's own manage grant, not one it gave away")
	require.Nil(t, old)
}
