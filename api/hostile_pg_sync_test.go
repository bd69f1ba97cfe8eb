package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/pgsync"
)

// TestHostilePgSyncInput: hostile or careless pgSync registrations, unobservations and
// stream paths are refused with a 4xx, publish no table, make no stream or observation,
// and leave the server serving. Table and column names never reach SQL unless they are
// plain identifiers on the allow-list.
func TestHostilePgSyncInput(t *testing.T) {
	dbURL := pgtest.URL(t)
	dropPgSyncSlotsAtEnd(t, dbURL)
	pgExec(t, dbURL, `CREATE TABLE orders (id int PRIMARY KEY, v text)`)
	h := setup(t, testserver.Options{DBURL: dbURL, QuietLogs: true, API: api.Config{MaxBodyBytes: 64 << 10},
		PgSync: pgsync.Options{Tables: []string{"public.orders"}}})
	h.registerType(`{"name":"notebook","description":"Keeps notes"}`)
	h.spawn("notebook", "n1", `{}`)
	const reg = "/_electric/pg-sync/register"
	const unobserve = entitiesPath + "/notebook/n1/pg-sync-observations/"
	manyCols := `["` + strings.Repeat(`c","`, pgsync.MaxColumns) + `c"]`
	cases := []hostileCase{
		{name: "not JSON", method: "POST", path: reg, body: `{"options":`, status: bad, code: invalid},
		{name: "not an object", method: "POST", path: reg, body: `[]`, status: bad, code: invalid},
		{name: "no options", method: "POST", path: reg, body: `{}`, status: bad, code: invalid},
		{name: "options not an object", method: "POST", path: reg, body: `{"options":"orders"}`, status: bad, code: invalid},
		{name: "table not a string", method: "POST", path: reg, body: `{"options":{"table":7}}`, status: bad, code: invalid},
		{name: "table with SQL", method: "POST", path: reg, body: `{"options":{"table":"orders; DROP TABLE orders"}}`, status: bad, code: invalid},
		{name: "table quoted", method: "POST", path: reg, body: `{"options":{"table":"\"orders\""}}`, status: bad, code: invalid},
		{name: "table too long", method: "POST", path: reg, body: `{"options":{"table":"` + strings.Repeat("t", 64) + `"}}`, status: bad, code: invalid},
		{name: "table with a NUL", method: "POST", path: reg, body: `{"options":{"table":"orders\u0000"}}`, status: bad, code: invalid},
		{name: "table empty", method: "POST", path: reg, body: `{"options":{"table":""}}`, status: bad, code: invalid},
		{name: "entityd's own table", method: "POST", path: reg, body: `{"options":{"table":"public.entities"}}`, status: http.StatusForbidden, code: "FORBIDDEN"},
		{name: "a system catalog", method: "POST", path: reg, body: `{"options":{"table":"pg_catalog.pg_authid"}}`, status: http.StatusForbidden, code: "FORBIDDEN"},
		{name: "too many columns", method: "POST", path: reg, body: `{"options":{"table":"orders","columns":` + manyCols + `}}`, status: bad, code: invalid},
		{name: "column with SQL", method: "POST", path: reg, body: `{"options":{"table":"orders","columns":["id) FROM x; --"]}}`, status: bad, code: invalid},
		{name: "columns nested", method: "POST", path: reg, body: `{"options":{"table":"orders","columns":[["id"]]}}`, status: bad, code: invalid},
		{name: "columns empty", method: "POST", path: reg, body: `{"options":{"table":"orders","columns":[]}}`, status: bad, code: invalid},
		{name: "where clause", method: "POST", path: reg, body: `{"options":{"table":"orders","where":"true) OR (1=1"}}`, status: bad, code: invalid},
		{name: "params", method: "POST", path: reg, body: `{"options":{"table":"orders","params":["1"]}}`, status: bad, code: invalid},
		{name: "replica unknown", method: "POST", path: reg, body: `{"options":{"table":"orders","replica":"all"}}`, status: bad, code: invalid},
		{name: "url too long", method: "POST", path: reg, body: `{"options":{"table":"orders","url":"http://x/` + strings.Repeat("a", pgsync.MaxURL) + `"}}`, status: bad, code: invalid},
		{name: "metadata value too long", method: "POST", path: reg, body: `{"options":{"table":"orders"},"metadata":{"entityUrl":"/` + strings.Repeat("a", 2000) + `"}}`, status: bad, code: invalid},
		{name: "metadata names no entity", method: "POST", path: reg, body: `{"options":{"table":"orders"},"metadata":{"entityUrl":"/notebook/none"}}`, status: nf, code: "NOT_FOUND"},
		{name: "options.metadata not an object", method: "POST", path: reg, body: `{"options":{"table":"orders","metadata":[]}}`, status: bad, code: invalid},
		{name: "metadata unknown member", method: "POST", path: reg, body: `{"options":{"table":"orders"},"metadata":{"tenantId":"other"}}`, status: bad, code: invalid},
		{name: "body too large", method: "POST", path: reg, body: `{"options":{"table":"orders","url":"` + strings.Repeat("x", 70<<10) + `"}}`, status: http.StatusRequestEntityTooLarge, code: "PAYLOAD_TOO_LARGE"},
		{name: "unobserve, ref too long", method: "DELETE", path: unobserve + strings.Repeat("a", 65), status: bad, code: invalid},
		{name: "unobserve, ref with a quote", method: "DELETE", path: unobserve + "ab%27cd", status: bad, code: invalid},
		{name: "unobserve, principal entity", method: "DELETE", path: entitiesPath + "/principal/system:dev-local/pg-sync-observations/ab", status: bad, code: invalid},
		{name: "unobserve, no entity", method: "DELETE", path: entitiesPath + "/notebook/none/pg-sync-observations/ab", status: nf, code: "NOT_FOUND"},
		{name: "stream, encoded slash", method: "GET", path: "/_electric/pg-sync/a%2Fb?offset=-1", status: nf},
		{name: "stream, none there", method: "GET", path: "/_electric/pg-sync/0123?offset=-1", status: nf},
		{name: "stream, append to none", method: "POST", path: "/_electric/pg-sync/0123", body: `[]`, status: nf},
		{name: "stream, create", method: "PUT", path: "/_electric/pg-sync/0123", body: `[]`, status: bad, code: invalid},
	}
	published := func() string {
		var n string
		require.NoError(t, h.srv.Pool.QueryRow(context.Background(), `SELECT count(*)::text FROM pg_publication_tables`).Scan(&n))
		return n
	}
	h.runHostileCases(t, cases, published, nil) // published: no table is added to the publication
	requireStatus(t, h.do(http.MethodPost, reg, `{"options":{"table":"orders"}}`), http.StatusOK)
}
