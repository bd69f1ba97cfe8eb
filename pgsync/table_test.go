package pgsync

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseTable(t *testing.T) {
	for in, want := range map[string]Table{
		"orders":                       {"public", "orders"},
		"app.Orders":                   {"app", "Orders"},
		"_x.y$1":                       {"_x", "y$1"},
		"s." + strings.Repeat("t", 63): {"s", strings.Repeat("t", 63)},
	} {
		got, err := ParseTable(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", ".", "a.", ".a", "a.b.c", `"a"`, "a b", "1a", "$a", "a;b", "a-b", "é", strings.Repeat("t", 64), "a\x00"} {
		_, err := ParseTable(in)
		require.ErrorIs(t, err, ErrBadTable, "%q", in)
	}
}

// TestAllowListNeverHoldsOwnTables: entityd's tables, published views, its migration
// table and system catalogs cannot be made observable, in any schema.
func TestAllowListNeverHoldsOwnTables(t *testing.T) {
	for _, name := range []string{"streams", "public.stream_messages", "app.entities", "entity_shape_rows", "entityd_schema_version",
		"pg_sync_sources", "pg_catalog.pg_authid", "information_schema.tables", "pg_temp_1.x"} {
		_, err := ParseAllowList([]string{name})
		require.Error(t, err, name)
	}
	got, err := ParseAllowList([]string{" orders ", "", "app.items"})
	require.NoError(t, err)
	require.Equal(t, map[string]Table{"public.orders": {"public", "orders"}, "app.items": {"app", "items"}}, got)
	_, err = ParseAllowList([]string{"a;b"})
	require.Error(t, err)
}

// FuzzParseTable: whatever ParseTable accepts is a pair of plain identifiers that
// quote to themselves, so the allow-list and the SQL name the same table.
func FuzzParseTable(f *testing.F) {
	for _, s := range []string{"orders", "app.orders", `"x"`, "a.b.c", "a;DROP", "é", "a\x00b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tb, err := ParseTable(s)
		if err != nil {
			return
		}
		for _, id := range []string{tb.Schema, tb.Name} {
			require.True(t, identifier(id))
			require.NotContains(t, id, `"`)
			require.NotContains(t, id, ".")
			require.LessOrEqual(t, len(id), MaxIdentifier)
		}
		require.True(t, s == tb.Name || s == tb.Key())
	})
}
