package migrations

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// sqlTableRef finds the table a SQL statement names after FROM, JOIN, INTO, UPDATE or
// TABLE.
var sqlTableRef = regexp.MustCompile(`(?i)\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\s+([a-z_][a-z0-9_]*)`)

// exempt are directories whose SQL may name any table: the migrations themselves and
// development tools that inspect a database from outside.
var exempt = []string{"migrations", "internal/tools", "internal/pgtest", "cmd/entityd-bench"}

// TestEveryTableHasOneOwner: SQL lives in .sql files under <owner>/queries/, and names
// only the owner's tables (and the published views); no Go file names a table in SQL
// (tests excepted: they may look at any row); every table a migration creates has an
// owner.
func TestEveryTableHasOneOwner(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var violations []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata" || name == "bench") {
				return filepath.SkipDir
			}
			return nil
		}
		pkg := filepath.ToSlash(filepath.Dir(rel))
		for _, e := range exempt {
			if pkg == e || strings.HasPrefix(pkg, e+"/") {
				return nil
			}
		}
		switch {
		case strings.HasSuffix(path, ".sql"):
			owner, ok := strings.CutSuffix(pkg, "/queries")
			if !ok {
				violations = append(violations, rel+": a .sql file outside a queries/ directory")
				return nil
			}
			for _, table := range tablesNamedInSQL(t, path) {
				if o, ok := Owners[table]; ok && o != owner {
					violations = append(violations, rel+": names "+table+" (owned by "+o+")")
				}
			}
		case strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go"):
			for _, table := range tablesNamedIn(t, path) {
				_, owned := Owners[table]
				_, published := Published[table]
				if owned || published {
					violations = append(violations, rel+": names "+table+" in Go (queries belong in "+pkg+"/queries/*.sql)")
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(violations) > 0 {
		t.Fatalf("SQL outside the owning package:\n%s", strings.Join(violations, "\n"))
	}

	created := regexp.MustCompile(`(?i)CREATE\s+TABLE\s+([a-z_][a-z0-9_]*)`)
	entries, err := fs.ReadDir(FS(), ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := fs.ReadFile(FS(), e.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range created.FindAllStringSubmatch(string(data), -1) {
			if _, ok := Owners[m[1]]; !ok {
				t.Errorf("%s creates table %s, which has no owner in Owners", e.Name(), m[1])
			}
		}
	}
}

// tablesNamedIn returns the tables the string literals of a Go file name in SQL.
func tablesNamedIn(t *testing.T, path string) []string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			return true
		}
		for _, m := range sqlTableRef.FindAllStringSubmatch(s, -1) {
			out = append(out, strings.ToLower(m[1]))
		}
		return true
	})
	return out
}

// tablesNamedInSQL returns the tables a .sql file names.
func tablesNamedInSQL(t *testing.T, path string) []string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		for _, m := range sqlTableRef.FindAllStringSubmatch(line, -1) {
			out = append(out, strings.ToLower(m[1]))
		}
	}
	return out
}

// TestTheCheckSeesAViolation: the check is not blind (a literal naming another owner's
// table is found).
func TestTheCheckSeesAViolation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.go")
	src := "package x\n\nconst q = `SELECT 1 FROM stream_messages m JOIN entities e ON true`\n"
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	got := tablesNamedIn(t, path)
	if strings.Join(got, ",") != "stream_messages,entities" {
		t.Fatalf("found %v", got)
	}
	sqlPath := filepath.Join(dir, "x.sql")
	sql := "-- name: X\n-- reads from nothing\nSELECT 1\n  FROM stream_heads h JOIN entities e ON true\n"
	if err := os.WriteFile(sqlPath, []byte(sql), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := tablesNamedInSQL(t, sqlPath); strings.Join(got, ",") != "stream_heads,entities" {
		t.Fatalf("found %v in the .sql file", got)
	}
}
