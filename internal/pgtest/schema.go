package pgtest

import (
	"context"
	"fmt"
	"io/fs"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"

	"github.com/entityd/entityd/migrations"
)

// MigrateSchemaTo brings schema (created when missing) of the database at dsn to
// migration version, so a test can write data the way an older entityd did and then
// run the migrations that follow over it.
func MigrateSchemaTo(t testing.TB, ctx context.Context, dsn, schema string, version int32) {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	// A startup parameter, not SET: tern runs RESET ALL after each migration.
	cfg.RuntimeParams["search_path"] = schema
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	m, err := migrate.NewMigrator(ctx, conn, migrations.VersionTable)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadMigrations(migrations.FS()); err != nil {
		t.Fatal(err)
	}
	if err := m.MigrateTo(ctx, version); err != nil {
		t.Fatal(err)
	}
}

// SchemaPool is a pool on dsn whose connections use schema, closed at the end of the test.
func SchemaPool(t testing.TB, ctx context.Context, dsn, schema string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// LatestVersion is the number of the newest embedded migration: what MigrateSchemaTo
// takes to bring a legacy schema up to the code that reads it.
func LatestVersion(t testing.TB) int32 {
	t.Helper()
	entries, err := fs.ReadDir(migrations.FS(), ".")
	if err != nil {
		t.Fatal(err)
	}
	var latest int32
	for _, e := range entries {
		var n int32
		if _, err := fmt.Sscanf(e.Name(), "%03d_", &n); err == nil && n > latest {
			latest = n
		}
	}
	return latest
}
