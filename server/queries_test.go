package server

import (
	"context"
	"testing"
	"time"

	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/internal/sqlfile"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// ownersWithQueries are the packages that keep .sql files; the server links all of them.
var ownersWithQueries = []string{"dssub", "entity", "inbox", "external", "shapes", "slashcmd/slashdb", "streamdb", "wake"}

// TestEveryQueryPreparesAgainstTheMigratedSchema is what a query compiler would give us:
// each query the program will send (fragments and values filled in) is parsed and
// planned by Postgres against the schema the migrations build, so a renamed column or a
// typo fails here rather than on the request that first runs it. Queries and fragments
// nobody uses fail too.
func TestEveryQueryPreparesAgainstTheMigratedSchema(t *testing.T) {
	sets := map[string]*sqlfile.Set{}
	for _, s := range sqlfile.Registered() {
		sets[s.Owner()] = s
	}
	for _, owner := range ownersWithQueries {
		if sets[owner] == nil {
			t.Fatalf("no queries registered by %s", owner)
		}
	}
	pool := pgtest.Pool(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	prepared := 0
	for _, s := range sets {
		if unused := s.Unused(); len(unused) > 0 {
			t.Errorf("%s: queries or fragments nobody uses: %v", s.Owner(), unused)
		}
		for name, q := range s.Fetched() {
			if _, err := conn.Conn().Prepare(ctx, "", q); err != nil {
				t.Errorf("%s.%s (%s): %v\n%s", s.Owner(), name, s.File(name), err, q)
				continue
			}
			prepared++
		}
	}
	if prepared < 100 {
		t.Fatalf("prepared only %d queries", prepared)
	}
	t.Logf("%d queries prepared", prepared)
}
