package streamdb

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/entityd/entityd/streamdb/internal/dbsqlc"
)

// queue adds to b the statement of a generated query, so that several go to Postgres in
// one round trip (the append path sends BEGIN with its locking reads and COMMIT with its
// writes). The SQL, the order of its arguments and the scanning of its rows stay the
// generated code's.
//
// run calls one method of queries with the DBTX it is given and returns the method's
// error. An :exec method is queued by that call (its error, if Postgres has one, fails
// the batch when it is read). A method that reads rows is called twice: now, with a
// DBTX that only records the statement (the method gets errRecorded back and returns it
// before any rows are handled), and again when the batch's results are read, in order,
// as pgx does on Close, with a DBTX that hands it this statement's results: that is
// when run handles the rows.
func queue(b *pgx.Batch, run func(db dbsqlc.DBTX) error) {
	rec := recorder{b: b}
	err := run(&rec)
	switch {
	case rec.calls != 1:
		panic(fmt.Sprintf("streamdb: a queued function must run one query (it ran %d)", rec.calls))
	case rec.read && errors.Is(err, errRecorded):
		b.QueuedQueries[len(b.QueuedQueries)-1].Fn = func(br pgx.BatchResults) error {
			return run(batchResult{br, rec.sql})
		}
	case rec.read || err != nil:
		panic(fmt.Sprintf("streamdb: a queued function must return its query's error (got %v)", err))
	}
}

// errRecorded is what the recording DBTX answers a read: the statement is not run yet.
var errRecorded = errors.New("streamdb: statement recorded for a batch")

// recorder is the DBTX of queue's first call: it queues the statement it is asked to run.
type recorder struct {
	b     *pgx.Batch
	sql   string
	read  bool // the statement returns rows: the method must be called again for them
	calls int
}

func (r *recorder) record(sql string, args []any, read bool) {
	r.b.Queue(sql, args...)
	r.sql, r.read = sql, read
	r.calls++
}

func (r *recorder) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	r.record(sql, args, false)
	return pgconn.CommandTag{}, nil
}

func (r *recorder) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	r.record(sql, args, true)
	return nil, errRecorded
}

func (r *recorder) QueryRow(_ context.Context, sql string, args ...any) pgx.Row {
	r.record(sql, args, true)
	return errRow{errRecorded}
}

// batchResult is the DBTX of queue's second call: the statement was sent with its batch,
// and what the method asks for is the next result of that batch.
type batchResult struct {
	br  pgx.BatchResults
	sql string // the statement sent, which the method must ask for again
}

// errOtherStatement: a queued function ran another query the second time (it must not
// choose its query from anything that changes between the calls).
var errOtherStatement = errors.New("streamdb: a queued function ran another statement with its results")

func (b batchResult) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, errOtherStatement // an :exec is never called twice
}

func (b batchResult) Query(_ context.Context, sql string, _ ...any) (pgx.Rows, error) {
	if sql != b.sql {
		return nil, errOtherStatement
	}
	return b.br.Query()
}

func (b batchResult) QueryRow(_ context.Context, sql string, _ ...any) pgx.Row {
	if sql != b.sql {
		return errRow{errOtherStatement}
	}
	return b.br.QueryRow()
}
