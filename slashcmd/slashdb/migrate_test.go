package slashdb_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/migrations"
	"github.com/entityd/entityd/slashcmd"
	"github.com/entityd/entityd/slashcmd/slashdb"
	"github.com/entityd/entityd/streamdb"
)

// legacySchema holds a database built by migrations 001-009 only, beside the fresh one
// pgtest made in public, so that migration 010 runs on data written the old way.
const legacySchema = "legacy"

// migrateLegacy brings the legacy schema to version (creating it at the first call).
func migrateLegacy(t *testing.T, ctx context.Context, dsn string, version int32) {
	t.Helper()
	pgtest.MigrateSchemaTo(t, ctx, dsn, legacySchema, version)
}

// TestMigration010MovesLayers: the layer stacks kept in slash_commands.dynamic_layers
// become one row per owner in their order; the service reads them back as they were, and
// the next registration writes its own layer only (not the migrated ones again).
func TestMigration010MovesLayers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.URL(t)
	migrateLegacy(t, ctx, dsn, 9)

	pool := pgtest.SchemaPool(t, ctx, dsn, legacySchema)

	const url = "/legacy/e1"
	old := []slashcmd.Layer{
		layer("review", "skills", sp("From skills"), "2026-03-01T12:00:01.000Z"),
		layer("review", "tool", sp("Line one\nline two"), "2026-03-01T12:00:02.000Z"),
		layer("review", "local", nil, "2026-03-01T12:00:03.000Z"),
	}
	old[1].Arguments = []slashcmd.Argument{{Name: "target", Type: slashcmd.ArgString}}
	stack, err := json.Marshal(old)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO slash_commands (entity_url, name, description, arguments, source, owner,
			version, updated_at, static_def, dynamic_layers)
		VALUES ($1, 'review', NULL, NULL, 'dynamic', 'local', NULL, '2026-03-01T12:00:03Z', NULL, $2),
		       ($1, 'help', 'Help', NULL, 'static', NULL, NULL, '2026-03-01T12:00:00Z',
		        '{"name":"help","description":"Help","arguments":null}', '[]')`, url, stack)
	require.NoError(t, err)

	migrateLegacy(t, ctx, dsn, 10)
	type stored struct {
		Owner    string
		Position int64
	}
	var got []stored
	rows, err := pool.Query(ctx, `SELECT owner, position FROM slash_command_layers WHERE entity_url = $1 AND name = 'review'
		ORDER BY position`, url)
	require.NoError(t, err)
	for rows.Next() {
		var s stored
		require.NoError(t, rows.Scan(&s.Owner, &s.Position))
		got = append(got, s)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []stored{{"skills", 1}, {"tool", 2}, {"local", 3}}, got, "one row per owner, bottom first")
	var helpLayers int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM slash_command_layers WHERE name = 'help'`).Scan(&helpLayers))
	require.Zero(t, helpLayers, "an empty stack moves no row")

	latest, err := migrations.Latest()
	require.NoError(t, err)
	migrateLegacy(t, ctx, dsn, latest) // the schema the service is written for
	streams, err := streamdb.Open(ctx, pool, streamdb.Options{})
	require.NoError(t, err)
	t.Cleanup(streams.Close)
	for _, path := range []string{url + "/main", url + "/slash-commands"} {
		_, _, err := streams.Create(ctx, path, streamdb.CreateConfig{ContentType: "application/json"}, nil)
		require.NoError(t, err)
	}
	svc := slashdb.NewService(streams, slashcmd.DefaultLimits)
	list, err := svc.List(ctx, url)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "help", list[0].Name)
	require.Nil(t, list[0].DynamicLayers)
	require.Equal(t, "local", *list[1].Owner)
	require.Equal(t, old, list[1].DynamicLayers, "the stack reads back as it was")

	// A new owner's registration writes the effective row and its own layer; the three
	// migrated layer rows keep the transaction that wrote them.
	migrated := layerXmins(t, ctx, pool, url)
	require.NoError(t, svc.For(url).Register(ctx, reg("review", "newcomer", sp("New"))))
	after := layerXmins(t, ctx, pool, url)
	require.Len(t, after, 4)
	for owner, xmin := range migrated {
		require.Equal(t, xmin, after[owner], "layer %s is not rewritten", owner)
	}
	list, err = svc.List(ctx, url)
	require.NoError(t, err)
	require.Equal(t, "newcomer", *list[1].Owner)
	require.Len(t, list[1].DynamicLayers, 4)
	require.Equal(t, old, list[1].DynamicLayers[:3], "the migrated layers stay below, in order")
}

// layerXmins maps each owner's layer row of the entity to the transaction that wrote it.
func layerXmins(t *testing.T, ctx context.Context, pool *pgxpool.Pool, url string) map[string]string {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT owner, xmin::text FROM slash_command_layers WHERE entity_url = $1`, url)
	require.NoError(t, err)
	out := map[string]string{}
	for rows.Next() {
		var owner, xmin string
		require.NoError(t, rows.Scan(&owner, &xmin))
		out[owner] = xmin
	}
	require.NoError(t, rows.Err())
	return out
}
