// Package migrations embeds entityd's numbered SQL migrations and applies them with
// jackc/tern. Every server runs Up at start; tern serializes concurrent migrators with a
// Postgres advisory lock, so two servers starting at once against one database cannot
// race, and a database already at the latest version is left untouched.
package migrations

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

//go:embed sql/*.sql
var files embed.FS

// VersionTable records the applied version (tern's bookkeeping table).
const VersionTable = "entityd_schema_version"

// FS returns the embedded migration files (numbered NNN_name.sql).
func FS() fs.FS {
	sub, err := fs.Sub(files, "sql")
	if err != nil {
		panic(err) // the embed pattern guarantees the directory exists
	}
	return sub
}

// Result reports what Up did.
type Result struct {
	From, To int32
}

// Up applies every pending migration on conn. Each migration runs in its own transaction.
func Up(ctx context.Context, conn *pgx.Conn) (Result, error) {
	m, err := migrate.NewMigrator(ctx, conn, VersionTable)
	if err != nil {
		return Result{}, fmt.Errorf("migrations: prepare: %w", err)
	}
	if err := m.LoadMigrations(FS()); err != nil {
		return Result{}, fmt.Errorf("migrations: load: %w", err)
	}
	from, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("migrations: read version: %w", err)
	}
	if err := m.Migrate(ctx); err != nil {
		return Result{}, fmt.Errorf("migrations: apply: %w", err)
	}
	to, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("migrations: read version: %w", err)
	}
	return Result{From: from, To: to}, nil
}

// Latest is the highest migration number embedded in this binary.
func Latest() (int32, error) {
	m := &migrate.Migrator{}
	if err := m.LoadMigrations(FS()); err != nil {
		return 0, err
	}
	if len(m.Migrations) == 0 {
		return 0, nil
	}
	return m.Migrations[len(m.Migrations)-1].Sequence, nil
}
