package streamdb

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testwait"
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
	require.ErrorContains(t, err, "INSERT INTO later VALUES (1, 'duplicate')", "the error names the queued statement")
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

// A transaction that fails, panics or is cancelled at any point leaves no connection
// checked out and no transaction open: BEGIN travels with the first statement, so the
// rollback path must cover a transaction that Postgres began in the same round trip as
// the failure.
func TestTxEndsCleanlyOnFailure(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	_, err := s.DB().Exec(ctx, `CREATE TABLE ends (id int PRIMARY KEY)`)
	require.NoError(t, err)
	pool := s.pool
	openTxs := func() int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND state LIKE 'idle in transaction%'`).Scan(&n))
		return n
	}
	clean := func(what string) {
		t.Helper()
		// The store's own background work borrows connections for moments; a connection
		// the transaction kept would stay checked out.
		testwait.Until(t, fmt.Sprintf("%s: every connection back in the pool", what), func() bool { return pool.Stat().AcquiredConns() == 0 }, 5*time.Second)
		require.Equal(t, 0, openTxs(), "%s: a transaction was left open", what)
		require.NoError(t, s.WithTx(ctx, func(ctx context.Context, tx *Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO ends VALUES ((SELECT coalesce(max(id), 0) + 1 FROM ends))`)
			return err
		}), "%s: the next transaction", what)
	}

	err = s.WithTx(ctx, func(ctx context.Context, tx *Tx) error {
		_, err := tx.Exec(ctx, `SELECT * FROM no_such_table`)
		return err
	})
	require.ErrorContains(t, err, "no_such_table")
	clean("the first statement failed")

	err = s.WithTx(ctx, func(ctx context.Context, tx *Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO ends VALUES (1000)`); err != nil {
			return err
		}
		return errors.New("the caller gives up")
	})
	require.EqualError(t, err, "the caller gives up")
	clean("the caller returned an error")

	func() {
		defer func() { require.NotNil(t, recover()) }()
		_ = s.WithTx(ctx, func(ctx context.Context, tx *Tx) error {
			tx.ExecLater(`INSERT INTO ends VALUES (1001)`)
			if _, err := tx.Exec(ctx, `SELECT 1`); err != nil {
				return err
			}
			panic("handler bug")
		})
	}()
	clean("the function panicked")

	cctx, cancel := context.WithCancel(ctx)
	err = s.WithTx(cctx, func(ctx context.Context, tx *Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO ends VALUES (1002)`); err != nil {
			return err
		}
		cancel()
		_, err := tx.Exec(ctx, `SELECT pg_sleep(0.2)`)
		return err
	})
	require.Error(t, err)
	clean("the context was cancelled")

	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM ends WHERE id >= 1000`).Scan(&n))
	require.Equal(t, 0, n, "nothing of the failed transactions was committed")
}

// A statement that fails to prepare fails its whole batch, BEGIN included: the
// transaction must end there, even for a caller that goes on, and nothing after it may
// run outside a transaction.
func TestTxFailedPrepareEndsTheTransaction(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	_, err := s.DB().Exec(ctx, `CREATE TABLE after_fail (id int PRIMARY KEY)`)
	require.NoError(t, err)

	err = s.WithTx(ctx, func(ctx context.Context, tx *Tx) error {
		tx.ExecLater(`INSERT INTO after_fail VALUES (1)`)
		_, err := tx.Exec(ctx, `SELECT * FROM no_such_table`)
		require.ErrorContains(t, err, "no_such_table")
		// a careless caller goes on, and even reports success
		_, err = tx.Exec(ctx, `INSERT INTO after_fail VALUES (2)`)
		require.Error(t, err, "a statement after the failed batch ran")
		var n int
		require.Error(t, tx.QueryRow(ctx, `SELECT count(*) FROM after_fail`).Scan(&n))
		tx.ExecLater(`INSERT INTO after_fail VALUES (3)`)
		return nil
	})
	require.ErrorContains(t, err, "no_such_table", "the commit of a failed transaction must fail")
	var n int
	require.NoError(t, s.DB().QueryRow(ctx, `SELECT count(*) FROM after_fail`).Scan(&n))
	require.Equal(t, 0, n)
}
