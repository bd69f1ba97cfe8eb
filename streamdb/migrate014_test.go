package streamdb_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/streamdb"
)

// TestMigration014MovesStreamsToTheRoot: streams created under /v1/stream/ before root
// streams existed are found at the root afterwards, with their contents; a root name
// already taken leaves that one stream where it was.
func TestMigration014MovesStreamsToTheRoot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.URL(t)
	const schema = "legacy14"
	pgtest.MigrateSchemaTo(t, ctx, dsn, schema, 13)
	pool := pgtest.SchemaPool(t, ctx, dsn, schema)
	// written as entityd wrote them then (the code of today reads later columns)
	for _, path := range []string{"/v1/stream/jobs/a", "/v1/stream/taken/x/main", "/taken/x/main"} {
		data := `{"at":"` + path + `"}`
		_, err := pool.Exec(ctx, `WITH s AS (INSERT INTO streams (path, content_type, tail_seq, tail_pos)
				VALUES ($1, 'application/octet-stream', 1, $3) RETURNING id)
			INSERT INTO stream_messages (stream_id, seq, end_pos, data) SELECT id, 1, $3, $2 FROM s`,
			path, []byte(data), len(data))
		require.NoError(t, err)
	}

	pgtest.MigrateSchemaTo(t, ctx, dsn, schema, pgtest.LatestVersion(t))
	store, err := streamdb.Open(ctx, pool, streamdb.Options{})
	require.NoError(t, err)
	defer store.Close()
	read := func(path string) string {
		m, err := store.Lookup(ctx, path)
		require.NoError(t, err, path)
		msgs, err := store.Read(ctx, m, streamdb.Offset{}, m.Tail)
		require.NoError(t, err, path)
		require.Len(t, msgs, 1, path)
		return string(msgs[0].Data)
	}
	require.Equal(t, `{"at":"/v1/stream/jobs/a"}`, read("/jobs/a"))
	require.Equal(t, `{"at":"/taken/x/main"}`, read("/taken/x/main"), "the root stream is untouched")
	require.Equal(t, `{"at":"/v1/stream/taken/x/main"}`, read("/v1/stream/taken/x/main"), "the conflicting one stays")
	_, err = store.Lookup(ctx, "/v1/stream/jobs/a")
	require.ErrorIs(t, err, streamdb.ErrNotFound)
}
