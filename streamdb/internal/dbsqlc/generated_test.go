package dbsqlc

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/entityd/entityd/migrations"
)

// update rewrites sqlc.sum (make sqlc does, right after sqlc generate).
var update = flag.Bool("update", false, "record the inputs and outputs of sqlc generate in sqlc.sum")

// stampFile records what the code here was generated from and what was generated.
const stampFile = "sqlc.sum"

// TestGeneratedFromTheQueries fails when the code here is not what make sqlc made from
// the current queries: a .sql file, sqlc.yaml or a migration that shapes one of
// streamdb's tables changed since, or a generated file was edited by hand. It compares
// hashes recorded by make sqlc, so it needs no sqlc (whose first build takes minutes);
// make sqlc-check runs sqlc itself.
func TestGeneratedFromTheQueries(t *testing.T) {
	got := stamp(t)
	if *update {
		if err := os.WriteFile(stampFile, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(stampFile)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("streamdb/internal/dbsqlc is not what make sqlc generates from the files now (run make sqlc):\n%s",
			lineDiff(string(want), got))
	}
}

// stamp is one "<sha256>  <path>" line per input and output of sqlc generate for
// streamdb, paths from the repository root.
func stamp(t *testing.T) string {
	t.Helper()
	var lines []string
	add := func(path string, data []byte) {
		sum := sha256.Sum256(data)
		lines = append(lines, hex.EncodeToString(sum[:])+"  "+path)
	}
	root := filepath.Join("..", "..", "..")
	inputs := []string{"sqlc.yaml"}
	queries, err := filepath.Glob(filepath.Join(root, "streamdb", "queries", "*.sql"))
	if err != nil {
		t.Fatal(err)
	}
	outputs, err := filepath.Glob(filepath.Join(root, "streamdb", "internal", "dbsqlc", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(queries, outputs...) {
		rel, _ := filepath.Rel(root, p)
		if !strings.HasSuffix(rel, "_test.go") {
			inputs = append(inputs, filepath.ToSlash(rel))
		}
	}
	for _, rel := range inputs {
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		add(rel, data)
	}
	// The schema sqlc reads is every migration; the ones that matter to these types are
	// those that create, alter or drop one of streamdb's tables.
	entries, err := fs.ReadDir(migrations.FS(), ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := fs.ReadFile(migrations.FS(), e.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range shapesTable.FindAllStringSubmatch(string(data), -1) {
			if migrations.Owners[strings.ToLower(m[1])] == "streamdb" {
				add("migrations/sql/"+e.Name(), data)
				break
			}
		}
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i][66:] < lines[j][66:] })
	return strings.Join(lines, "\n") + "\n"
}

// shapesTable finds the table a CREATE, ALTER or DROP TABLE statement names.
var shapesTable = regexp.MustCompile(`(?i)\b(?:CREATE|ALTER|DROP)\s+TABLE\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?([a-z_][a-z0-9_]*)`)

// lineDiff lists the lines only one of two stamps has.
func lineDiff(want, got string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var out []string
	for l := range w {
		if !g[l] {
			out = append(out, fmt.Sprintf("recorded: %s", l))
		}
	}
	for l := range g {
		if !w[l] {
			out = append(out, fmt.Sprintf("now:      %s", l))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}
