package slashdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/slashcmd"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wire"
)

// Snapshot returns the entity's effective rows together with the collection stream's
// tail at the same instant: a client that applies the rows and then follows the stream
// from the tail sees every later change exactly once. (The table and the stream change
// in the same transactions, so one repeatable-read snapshot of both is consistent.)
func (s *Service) Snapshot(ctx context.Context, entityURL string) ([]slashcmd.Row, streamdb.Offset, error) {
	tx, err := s.streams.DB().BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, streamdb.Offset{}, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var tail streamdb.Offset
	err = tx.QueryRow(ctx, sqlCollectionTail, entitypath.Collection(entityURL)).
		Scan(&tail.Seq, &tail.Pos)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, tail, ErrEntityNotFound
	}
	if err != nil {
		return nil, tail, fmt.Errorf("slashcmd: snapshot tail: %w", err)
	}
	entries, err := loadWith(ctx, tx, entityURL, false)
	if err != nil {
		return nil, tail, err
	}
	return slashcmd.NewSet(entries, s.limits, time.Now()).List(), tail, nil
}

// SnapshotEvents renders rows as the State Protocol snapshot a collection read starts
// with: snapshot-start, one insert per row, snapshot-end (both markers carry the offset
// the snapshot reflects).
func SnapshotEvents(rows []slashcmd.Row, at streamdb.Offset) [][]byte {
	events := make([][]byte, 0, len(rows)+2)
	events = append(events, streamdb.Control("snapshot-start", &at))
	for _, r := range rows {
		events = append(events, r.Event(wire.OpInsert, "", time.Time{}))
	}
	return append(events, streamdb.Control("snapshot-end", &at))
}
