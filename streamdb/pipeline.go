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
// writes), and has the query's answer handled when b's results are read, in order, as
// pgx does on Close.
//
// run calls one method of queries with the DBTX it is given and handles the method's
// answer. It is called twice: now, with a DBTX that only records the statement (the
// method gets errRecorded back and returns it before any answer is handled), and again
// when the statement's results come, with a DBTX that hands it those results. So the
// SQL, the order of its arguments and the scanning of its rows stay the generated code's.
func queue(b *pgx.Batch, run func(db dbsqlc.DBTX) error) {
	var rec recorder
	if err := run(&rec); !errors.Is(err, errRecorded) || rec.calls != 1 {
		panic(fmt.Sprintf("streamdb: a queued function must run one query and return its error (%d queries, %v)", rec.calls, err))
	}
	b.Queue(rec.sql, rec.args...).Fn = func(br pgx.BatchResults) error {
		return run(batchResult{br, rec.sql})
	}
}

// errRecorded is what the recording DBTX answers: the statement is not run yet.
var errRecorded = errors.New("streamdb: statement recorded for a batch")

// recorder is the DBTX of queue's first call: it keeps the statement it is asked to run.
type recorder struct {
	sql   string
	args  []any
	calls int
}

func (r *recorder) record(sql string, args []any) {
	r.sql, r.args = sql, args
	r.calls++
}

func (r *recorder) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	r.record(sql, args)
	return pgconn.CommandTag{}, errRecorded
}

func (r *recorder) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	r.record(sql, args)
	return nil, errRecorded
}

func (r *recorder) QueryRow(_ context.Context, sql string, args ...any) pgx.Row {
	r.record(sql, args)
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

func (b batchResult) Exec(_ context.Context, sql string, _ ...any) (pgconn.CommandTag, error) {
	if sql != b.sql {
		return pgconn.CommandTag{}, errOtherStatement
	}
	return b.br.Exec()
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
