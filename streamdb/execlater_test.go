package streamdb

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// Statements queued with ExecLater run in order, before the next statement the caller
// runs and before the commit; one that fails fails the transaction.
func TestExecLater(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	_, err := s.DB().Exec(ctx, `CREATE TABLE later (id int PRIMARY KEY, note text NOT NULL)`)
	require.NoError(t, err)

	err = s.WithTx(ctx, func(ctx context.Context, tx *Tx) error {
		tx.ExecLater(`INSERT INTO later VALUES (1, 'a')`)
		tx.ExecLater(`UPDATE later SET note = note || 'b' WHERE id = 1`)
		var note string
		require.NoError(t, tx.QueryRow(ctx, `SELECT note FROM later WHERE id = 1`).Scan(&note))
		require.Equal(t, "ab", note, "queued statements run, in order, before the next read")
		tx.ExecLater(`INSERT INTO later VALUES (2, 'sent at the commit')`)
		return nil
	})
	require.NoError(t, err)
	rows, err := s.DB().Query(ctx, `SELECT note FROM later ORDER BY id`)
	require.NoError(t, err)
	notes, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"ab", "sent at the commit"}, notes)

	// A failing queued statement fails the statement that sends it...
	err = s.WithTx(ctx, func(ctx context.Context, tx *Tx) error {
		tx.ExecLater(`INSERT INTO later VALUES (3, 'c')`)
		tx.ExecLater(`INSERT INTO later VALUES (1, 'duplicate')`)
		_, err := tx.Exec(ctx, `INSERT INTO later VALUES (4, 'd')`)
		return err
	})
	require.ErrorContains(t, err, "duplicate key")
	// ...or the commit, and nothing of the transaction stays.
	err = s.WithTx(ctx, func(ctx context.Context, tx *Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO later VALUES (5, 'e')`); err != nil {
			return err
		}
		tx.ExecLater(`INSERT INTO later VALUES (6, NULL)`)
		return nil
	})
	require.ErrorContains(t, err, "null value")
	var n int
	require.NoError(t, s.DB().QueryRow(ctx, `SELECT count(*) FROM later`).Scan(&n))
	require.Equal(t, 2, n)
}
