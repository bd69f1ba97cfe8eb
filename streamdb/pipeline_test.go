package streamdb

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/streamdb/internal/dbsqlc"
)

// batchLog is a batchSender that records the statements of each batch it sends.
type batchLog struct {
	next    batchSender
	batches [][]string
}

var generatedName = regexp.MustCompile(`^-- name: (\w+) :`)

func (l *batchLog) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	var names []string
	for _, q := range b.QueuedQueries {
		name := q.SQL
		if m := generatedName.FindStringSubmatch(q.SQL); m != nil {
			name = m[1]
		}
		names = append(names, name)
	}
	l.batches = append(l.batches, names)
	return l.next.SendBatch(ctx, b)
}

// An append transaction is two round trips whatever its requests carry: BEGIN with the
// locking reads, the writes with COMMIT.
func TestAppendTransactionIsTwoRoundTrips(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	for _, p := range []string{"/rt/a", "/rt/b"} {
		_, _, err := s.Create(ctx, p, CreateConfig{}, nil)
		require.NoError(t, err)
	}
	conn, err := s.pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	log := &batchLog{next: conn}
	reqs := []*AppendRequest{
		{Path: "/rt/a", Messages: [][]byte{[]byte("one")}, Producer: &ProducerTuple{ID: "p", Epoch: 0, Seq: 0}},
		{Path: "/rt/b", Messages: [][]byte{[]byte("two"), []byte("three")}, Dedupe: &Dedupe{Key: "k", Hash: []byte{1}, Ref: "r"}},
		{Path: "/rt/b", Close: true, Producer: &ProducerTuple{ID: "q", Epoch: 2, Seq: 0}},
	}
	results, errs, _, err := s.runAppendsWith(ctx, log, time.Now(), reqs, false, "BEGIN", "COMMIT")
	require.NoError(t, err)
	require.Equal(t, []error{nil, nil, nil}, errs)
	require.Equal(t, [][]string{
		{"BEGIN", "LockStreams", "SelectProducers", "SelectDedupe"},
		{"InsertMessages", "UpdateTails", "UpsertProducers", "InsertDedupe", "COMMIT"},
	}, log.batches)
	require.Equal(t, Offset{Seq: 1, Pos: 3}, results[0].Tail)
	require.Equal(t, Offset{Seq: 2, Pos: 8}, results[1].Tail)
	require.True(t, results[2].Closed)

	// What the writes stored reads back: the tails, and the closing producer that a
	// retry of the close is recognised by.
	b, err := s.Lookup(ctx, "/rt/b")
	require.NoError(t, err)
	require.Equal(t, Offset{Seq: 2, Pos: 8}, b.Tail)
	require.True(t, b.Closed)
	require.Equal(t, &ProducerTuple{ID: "q", Epoch: 2, Seq: 0}, b.ClosedBy)
	require.Nil(t, b.LastStreamSeq)
	a, err := s.Lookup(ctx, "/rt/a")
	require.NoError(t, err)
	require.False(t, a.Closed)
	require.Nil(t, a.ClosedBy)
	retry, err := s.Append(ctx, &AppendRequest{Path: "/rt/b", Close: true, Producer: &ProducerTuple{ID: "q", Epoch: 2, Seq: 0}})
	require.NoError(t, err)
	require.True(t, retry.Duplicate)
	hash, ok, err := s.DedupeHash(ctx, b.ID, "k")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []byte{1}, hash)
}

// A queued function must run exactly one query, and the same one both times.
func TestQueueRefusesMisuse(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	require.Panics(t, func() {
		queue(&pgx.Batch{}, func(dbsqlc.DBTX) error { return nil })
	}, "no query")
	require.Panics(t, func() {
		queue(&pgx.Batch{}, func(db dbsqlc.DBTX) error {
			_ = queries.Touch(ctx, db, dbsqlc.TouchParams{ID: 1})
			return queries.Touch(ctx, db, dbsqlc.TouchParams{ID: 2})
		})
	}, "two queries")

	require.Panics(t, func() {
		queue(&pgx.Batch{}, func(db dbsqlc.DBTX) error {
			_, _ = queries.FreshState(ctx, db, 1)
			return nil
		})
	}, "a read whose error is dropped")

	calls := 0
	b := &pgx.Batch{}
	queue(b, func(db dbsqlc.DBTX) error {
		calls++
		if calls == 1 {
			_, err := queries.FreshState(ctx, db, 1)
			return err
		}
		_, err := queries.MetaByID(ctx, db, 1)
		return err
	})
	err := s.pool.SendBatch(ctx, b).Close()
	require.True(t, errors.Is(err, errOtherStatement), "got %v", err)

	// An :exec runs once, queued; its failure fails the batch when it is read.
	calls = 0
	b = &pgx.Batch{}
	queue(b, func(db dbsqlc.DBTX) error {
		calls++
		return queries.RegisterListener(ctx, db, dbsqlc.RegisterListenerParams{ProcID: "twice"})
	})
	queue(b, func(db dbsqlc.DBTX) error {
		return queries.RegisterListener(ctx, db, dbsqlc.RegisterListenerParams{ProcID: "twice"})
	})
	require.Equal(t, 1, calls)
	require.Len(t, b.QueuedQueries, 2)
	require.NoError(t, s.pool.SendBatch(ctx, b).Close(), "an upsert twice is fine")
	b = &pgx.Batch{}
	queue(b, func(db dbsqlc.DBTX) error {
		return queries.InsertMessages(ctx, db, dbsqlc.InsertMessagesParams{
			StreamIDs: []int64{1, 1}, Seqs: []int64{1, 1}, EndPositions: []int64{1, 1}, Data: [][]byte{{1}, {1}}})
	})
	require.ErrorContains(t, s.pool.SendBatch(ctx, b).Close(), "duplicate key")
}
