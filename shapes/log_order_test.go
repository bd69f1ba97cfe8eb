package shapes

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/pgtest"
)

// Changes come in (txid, id) order as numbers: a change of transaction 10 after one of
// transaction 9, though "10" sorts before "9" as text (the query once ordered by its
// text output column, which also scanned the whole log instead of its index).
func TestChangesInTransactionOrder(t *testing.T) {
	pool := pgtest.Pool(t)
	ctx := context.Background()
	for _, c := range []struct {
		txid, key string
	}{{"10", "/t/ten"}, {"9", "/t/nine"}, {"100", "/t/hundred"}} {
		_, err := pool.Exec(ctx, `INSERT INTO shape_log (txid, relation, key, operation, value)
			VALUES ($1::text::xid8, 'entities', $2, 'insert', jsonb_build_object('url', $2::text))`, c.txid, c.key)
		require.NoError(t, err)
	}
	v := &view{t: tables["entities"], cols: []string{"url"}}
	out, _, exhausted, err := changes(ctx, pool, v, offset{}, 10)
	require.NoError(t, err)
	require.True(t, exhausted)
	var keys []string
	for _, m := range out {
		keys = append(keys, m.pk)
	}
	require.Equal(t, []string{"/t/nine", "/t/ten", "/t/hundred"}, keys)
}
