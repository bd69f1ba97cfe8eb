package pgtest

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/entityd/entityd/migrations"
)

func TestMain(m *testing.M) { Main(m) }

func currentDB(t *testing.T, dsn string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var name string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestEachTestGetsItsOwnDatabase(t *testing.T) {
	var names []string
	for i := range 2 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			pool := Pool(t)
			ctx := context.Background()
			var name string
			if err := pool.QueryRow(ctx, "SELECT current_database()").Scan(&name); err != nil {
				t.Fatal(err)
			}
			names = append(names, name)
			var n int
			if err := pool.QueryRow(ctx, "SELECT count(*) FROM streams").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Fatalf("fresh database has %d streams, want 0 (a previous test's rows leaked)", n)
			}
			if _, err := pool.Exec(ctx, "INSERT INTO streams (path, content_type) VALUES ('/x', 'text/plain')"); err != nil {
				t.Fatal(err)
			}
		})
	}
	if len(names) != 2 || names[0] == names[1] {
		t.Fatalf("databases %q, want two different ones", names)
	}
	if u1, u2 := URL(t), URL(t); u1 == u2 || currentDB(t, u1) == currentDB(t, u2) {
		t.Fatalf("two URL calls share a database: %s, %s", u1, u2)
	}
}

func TestMigrationsApplied(t *testing.T) {
	pool := Pool(t)
	ctx := context.Background()
	var streams *string
	if err := pool.QueryRow(ctx, "SELECT to_regclass('streams')::text").Scan(&streams); err != nil {
		t.Fatal(err)
	}
	if streams == nil {
		t.Fatal("table streams does not exist")
	}
	latest, err := migrations.Latest()
	if err != nil {
		t.Fatal(err)
	}
	var version int32
	if err := pool.QueryRow(ctx, "SELECT version FROM "+migrations.VersionTable).Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version != latest {
		t.Fatalf("schema version %d, want %d", version, latest)
	}
}

func TestParallelSubtests(t *testing.T) {
	for i := range 8 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			pool := Pool(t)
			ctx := context.Background()
			path := fmt.Sprintf("/p/%d", i)
			if _, err := pool.Exec(ctx, "INSERT INTO streams (path, content_type) VALUES ($1, 'application/json')", path); err != nil {
				t.Fatal(err)
			}
			var paths []string
			rows, _ := pool.Query(ctx, "SELECT path FROM streams")
			paths, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			if len(paths) != 1 || paths[0] != path {
				t.Fatalf("streams %q, want only %q", paths, path)
			}
		})
	}
}

func TestDatabaseDroppedOnCleanup(t *testing.T) {
	var name string
	t.Run("inner", func(t *testing.T) {
		name = currentDB(t, URL(t))
	})
	h, err := get()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, h.adminURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Fatalf("database %s still exists after its test ended", name)
	}
	// The template stays, unconnectable, so CREATE DATABASE ... TEMPLATE never finds users on it.
	var isTemplate, allowConn bool
	if err := conn.QueryRow(ctx, "SELECT datistemplate, datallowconn FROM pg_database WHERE datname = $1", h.template).Scan(&isTemplate, &allowConn); err != nil {
		t.Fatal(err)
	}
	if !isTemplate || allowConn {
		t.Fatalf("template %s: datistemplate=%v datallowconn=%v, want true/false", h.template, isTemplate, allowConn)
	}
}

func TestTemplateName(t *testing.T) {
	a, err := templateName()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := templateName()
	if a != b || !regexp.MustCompile(`^entityd_tpl_[0-9a-f]{8}$`).MatchString(a) {
		t.Fatalf("templateName() = %q, %q", a, b)
	}
}

func TestNamesAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		n := newDBName()
		if seen[n] || len(n) > 63 {
			t.Fatalf("name %q repeated or longer than 63 bytes", n)
		}
		seen[n] = true
	}
}

func TestWithDatabase(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable": "postgres://postgres@127.0.0.1:5432/x?sslmode=disable",
		"postgresql://u:p@h/db":         "postgresql://u:p@h/x",
		"host=h port=1 dbname=postgres": "host=h port=1 dbname=postgres dbname='x'",
	} {
		if got, err := withDatabase(in, "x"); err != nil || got != want {
			t.Errorf("withDatabase(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// BenchmarkURL measures creating one migrated test database (dropped at the end).
func BenchmarkURL(b *testing.B) {
	URL(b) // template and connections warm
	b.ResetTimer()
	began := time.Now()
	for range b.N {
		URL(b)
	}
	b.ReportMetric(float64(time.Since(began).Microseconds())/1000/float64(b.N), "ms/db")
}
