package streamdb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/entityd/entityd/internal/dberr"
	"github.com/entityd/entityd/streamdb/internal/dbsqlc"
)

// Tx is a transaction that can append to streams and write the caller's own tables
// together, for operations that must be atomic across both (spawning an entity with its
// stream, a signal that changes a status and appends an event, a handler's output with
// its acknowledgement). Readers are notified after it commits.
//
// A Tx costs no round trip of its own: BEGIN goes to Postgres with the first statement,
// and COMMIT with the statements queued by ExecLater (like the group-commit lanes, which
// send BEGIN with their reads and COMMIT with their writes).
type Tx struct {
	store *Store
	conn  *pgxpool.Conn
	begun bool // BEGIN was sent
	// err is the first failure of a batch: the transaction is over. Later statements and
	// the commit fail with it. (A batch that fails to prepare never ran its BEGIN; without
	// this, statements after it would run outside any transaction.)
	err error
	// later are statements queued by ExecLater, not sent yet.
	later pgx.Batch
	w     writeSet
	gone  []int64
}

// WithTx runs fn in a transaction and commits it when fn returns nil. Deadlocks and
// serialization failures re-run fn (at most 3 times), so fn must only do database work
// through tx and must not keep side effects of an earlier attempt.
func (s *Store) WithTx(ctx context.Context, fn func(ctx context.Context, tx *Tx) error) error {
	t, err := dberr.Retry(func() (*Tx, error) { return s.runTx(ctx, fn) })
	if err != nil {
		return err
	}
	s.publish(&t.w)
	for _, id := range t.gone {
		s.publishGone(id)
	}
	return nil
}

func (s *Store) runTx(ctx context.Context, fn func(ctx context.Context, tx *Tx) error) (*Tx, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("streamdb: begin: %w", err)
	}
	t := &Tx{store: s, conn: conn}
	committed := false
	defer func() {
		if t.begun && !committed {
			endTx(ctx, conn)
		}
		conn.Release()
	}()
	if err := fn(ctx, t); err != nil {
		return nil, err
	}
	if (!t.w.empty() || len(t.gone) > 0) && s.notifyNeeded() {
		notify := dbsqlc.NotifyParams{Channel: s.opts.NotifyChannel, Payload: s.notifyPayload(&t.w, t.gone...)}
		queue(&t.later, func(db dbsqlc.DBTX) error { return queries.Notify(ctx, db, notify) })
	}
	if t.err != nil {
		return nil, t.err // fn went on after a failed statement
	}
	if !t.begun && t.later.Len() == 0 {
		return t, nil // nothing was run: nothing to commit
	}
	tag, err := t.run(ctx, "COMMIT")
	if err != nil {
		return nil, fmt.Errorf("streamdb: commit: %w", err)
	}
	committed = true
	if tag.String() == "ROLLBACK" { // the transaction had failed: Postgres rolled it back
		return nil, fmt.Errorf("streamdb: commit: %w", pgx.ErrTxCommitRollback)
	}
	return t, nil
}

// ExecLater queues a statement whose result the caller does not read (a write of its own
// tables). Queued statements go to Postgres together with the next statement run through
// t, or with the commit, in one round trip; an error of one of them fails that
// statement, or the commit, and so the transaction.
func (t *Tx) ExecLater(sql string, args ...any) { t.later.Queue(sql, args...) }

// pending takes what has to be sent before a statement: BEGIN, when it was not sent yet,
// and the queued statements.
func (t *Tx) pending() *pgx.Batch {
	b := &pgx.Batch{}
	if !t.begun {
		b.Queue("BEGIN")
		t.begun = true
	}
	b.QueuedQueries = append(b.QueuedQueries, t.later.QueuedQueries...)
	t.later = pgx.Batch{}
	return b
}

// send sends what is pending followed by sql, and reads the results of everything but
// sql, which the caller reads from the returned results (and then closes them).
func (t *Tx) send(ctx context.Context, sql string, args ...any) (pgx.BatchResults, error) {
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	return t.sendBatch(ctx, b)
}

// sendBatch sends what is pending followed by b's statements, and reads the results of
// what was pending: the caller reads b's from the returned results (and then closes them).
func (t *Tx) sendBatch(ctx context.Context, b *pgx.Batch) (pgx.BatchResults, error) {
	if t.err != nil {
		return nil, t.err
	}
	all := t.pending()
	ahead := all.Len()
	all.QueuedQueries = append(all.QueuedQueries, b.QueuedQueries...)
	br := t.conn.SendBatch(ctx, all)
	for i := range ahead {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			// say which statement: a queued write fails where a later one is sent
			return nil, t.fail(fmt.Errorf("streamdb: %s: %w", statementName(all.QueuedQueries[i].SQL), err))
		}
	}
	return br, nil
}

// Pipeline runs b's statements in the transaction in one round trip (with what is
// pending), in order: each still sees what committed before it started, as it would
// sent alone. The caller reads b's results in order and closes them; a failure ends the
// transaction.
func (t *Tx) Pipeline(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	br, err := t.sendBatch(ctx, b)
	if err != nil {
		return failedBatch{err}
	}
	return &txBatch{BatchResults: br, t: t}
}

// statementName is the start of a statement's SQL, to name it in an error.
func statementName(sql string) string {
	sql = strings.Join(strings.Fields(sql), " ")
	if len(sql) > 60 {
		sql = sql[:60] + "…"
	}
	return sql
}

// fail records the first failure of a batch (see Tx.err) and returns it.
func (t *Tx) fail(err error) error {
	if t.err == nil {
		t.err = err
	}
	return err
}

// run sends what is pending and sql, in one round trip.
func (t *Tx) run(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	br, err := t.send(ctx, sql, args...)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return tag, t.fail(err)
	}
	return tag, nil
}

// SendBatch sends what is pending and b in one round trip (for runAppends, which only
// closes the results).
func (t *Tx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.err != nil {
		return failedBatch{t.err}
	}
	all := t.pending()
	all.QueuedQueries = append(all.QueuedQueries, b.QueuedQueries...)
	return &txBatch{BatchResults: t.conn.SendBatch(ctx, all), t: t}
}

// txBatch records a failure of a batch sent for runAppends in its Tx.
type txBatch struct {
	pgx.BatchResults
	t *Tx
}

func (b *txBatch) Close() error {
	if err := b.BatchResults.Close(); err != nil {
		return b.t.fail(err)
	}
	return nil
}

// failedBatch answers runAppends for a Tx that already failed: Close reports why.
type failedBatch struct{ err error }

func (b failedBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, b.err }
func (b failedBatch) Query() (pgx.Rows, error)         { return nil, b.err }
func (b failedBatch) QueryRow() pgx.Row                { return errRow(b) }
func (b failedBatch) Close() error                     { return b.err }
func (b failedBatch) Tx() pgx.Tx                       { return nil }

// Append appends within the transaction, with the same rules as Store.Append. An error
// about the request (not found, closed, producer fencing, ...) leaves the transaction
// usable; the caller decides whether to abort.
func (t *Tx) Append(ctx context.Context, req *AppendRequest) (AppendResult, error) {
	results, errs, w, err := t.store.runAppends(ctx, t, t.store.clock.Now(), []*AppendRequest{req}, false)
	if err != nil {
		return AppendResult{}, err
	}
	for _, id := range w.order {
		t.w.touch(w.touched[id])
	}
	return results[0], errs[0]
}

// Exec runs a statement of the caller's own in the transaction.
func (t *Tx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return t.run(ctx, sql, args...)
}

// Query runs a query of the caller's own in the transaction.
func (t *Tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	br, err := t.send(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, t.fail(err)
	}
	return &batchRows{Rows: rows, br: br, t: t}, nil
}

// QueryRow runs a single-row query of the caller's own in the transaction.
func (t *Tx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	br, err := t.send(ctx, sql, args...)
	if err != nil {
		return errRow{err}
	}
	return batchRow{br.QueryRow(), br, t}
}

// batchRows and batchRow close the batch a query was sent in once it has been read (the
// connection takes no other statement until then).
type batchRows struct {
	pgx.Rows
	br  pgx.BatchResults
	t   *Tx
	err error
}

func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *batchRows) Close() {
	r.Rows.Close()
	if err := r.Rows.Err(); err != nil {
		r.t.fail(err)
	}
	if err := r.br.Close(); err != nil && r.err == nil {
		r.err = r.t.fail(err)
	}
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return r.t.fail(err)
	}
	return r.err
}

type batchRow struct {
	row pgx.Row
	br  pgx.BatchResults
	t   *Tx
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil || errors.Is(err, pgx.ErrNoRows) {
		if cerr != nil {
			err = cerr
		}
	}
	// No row is an answer, not a failure; anything else ends the transaction.
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		r.t.fail(err)
	}
	return err
}

// errRow carries a failure to a caller that reads its row later.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
