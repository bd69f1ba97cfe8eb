package streamdb

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/entityd/entityd/streamdb/internal/dbsqlc"
)

// MessageEnd returns the offset just after message seq of stream m (Start for seq 0 or
// less, the tail for seq at or past it), so that a reader can start a few messages
// before the tail — "the last n messages" — without reading what comes before them. A
// fork's inherited messages are looked up in its source chain. ErrNotFound: the message
// is no longer stored (retention removed it). Unlike OffsetAt it takes the stream's
// metadata, which it needs for the clamping and the fork chain.
func (s *Store) MessageEnd(ctx context.Context, m *Meta, seq int64) (Offset, error) {
	switch {
	case seq <= 0:
		return Start, nil
	case seq >= m.Tail.Seq:
		return m.Tail, nil
	}
	for m.IsFork() && seq <= m.ForkSeq {
		src, err := s.lookupByID(ctx, m.ForkSourceID)
		if err != nil {
			return Offset{}, fmt.Errorf("streamdb: fork source of %s: %w", m.Path, err)
		}
		m = src
	}
	pos, err := queries.OffsetAt(ctx, s.pool, dbsqlc.OffsetAtParams{StreamID: m.ID, Seq: seq})
	if errors.Is(err, pgx.ErrNoRows) {
		return Offset{}, ErrNotFound
	}
	if err != nil {
		return Offset{}, fmt.Errorf("streamdb: offset of message %d: %w", seq, err)
	}
	return Offset{Seq: seq, Pos: pos}, nil
}
