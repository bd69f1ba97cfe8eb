package streamdb

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/streamdb/internal/dbsqlc"
)

// Point lookups other packages need in stream storage. They live here, beside the
// tables and the envelope format they depend on, so that no other package names
// stream_messages or stream_dedupe.

// OffsetAt is the offset just after message seq of stream id (the position a reader
// resumes from once seq was handled). seq 0 is the start.
func (s *Store) OffsetAt(ctx context.Context, id, seq int64) (Offset, error) {
	if seq == 0 {
		return Start, nil
	}
	pos, err := queries.OffsetAt(ctx, s.pool, dbsqlc.OffsetAtParams{StreamID: id, Seq: seq})
	if errors.Is(err, pgx.ErrNoRows) {
		// a fork's first messages are its source's: follow the fork chain
		var off Offset
		err = s.WithTx(ctx, func(ctx context.Context, tx *Tx) error {
			var err error
			off, err = tx.OffsetAfter(ctx, id, seq)
			return err
		})
		if err == nil {
			return off, nil
		}
	}
	if err != nil {
		return Offset{}, fmt.Errorf("streamdb: offset of message %d of stream %d: %w", seq, id, err)
	}
	return Offset{Seq: seq, Pos: pos}, nil
}

// LastEvent returns the newest message of stream id that is a State Protocol event of
// type typ with key key (ok false when there is none). It matches the envelope's first
// bytes as Event.Marshal writes them ({"type":…,"key":…), so the lookup costs one prefix
// comparison per message and never parses a payload (jsonb would refuse a \u0000).
func (s *Store) LastEvent(ctx context.Context, id int64, typ, key string) (data []byte, ok bool, err error) {
	prefix := rawjson.AppendString([]byte(`{"type":`), typ)
	prefix = append(prefix, `,"key":`...)
	prefix = rawjson.AppendString(prefix, key)
	data, err = queries.LastEvent(ctx, s.pool, dbsqlc.LastEventParams{StreamID: id, Prefix: prefix, PrefixLen: int32(len(prefix))})
	if errors.Is(err, pgx.ErrNoRows) {
		return s.lastInheritedEvent(ctx, id, prefix)
	}
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// lastInheritedEvent is LastEvent in what a fork inherits: its source's messages up to
// the fork point, and so on down the fork chain (ok false for a stream that is no fork).
func (s *Store) lastInheritedEvent(ctx context.Context, id int64, prefix []byte) ([]byte, bool, error) {
	m, err := s.lookupByID(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	bound := int64(math.MaxInt64)
	for m.IsFork() {
		bound = min(bound, m.ForkSeq)
		if m, err = s.lookupByID(ctx, m.ForkSourceID); err != nil {
			return nil, false, err
		}
		data, err := queries.LastEventUpTo(ctx, s.pool, dbsqlc.LastEventUpToParams{StreamID: m.ID, MaxSeq: bound,
			Prefix: prefix, PrefixLen: int32(len(prefix))})
		if err == nil {
			return data, true, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, false, err
		}
	}
	return nil, false, nil
}

// DedupeHash is the body hash recorded for keyed appends with key on stream id (ok
// false when the key is unused or was purged after the dedupe window).
func (s *Store) DedupeHash(ctx context.Context, id int64, key string) (hash []byte, ok bool, err error) {
	hash, err = queries.DedupeHash(ctx, s.pool, dbsqlc.DedupeHashParams{StreamID: id, Key: key})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	return hash, err == nil, err
}

// CountOwned is how many live plain streams owner owns, counted up to limit (for
// quotas: the count stops where the answer is known).
func (s *Store) CountOwned(ctx context.Context, owner string, limit int) (int, error) {
	n, err := queries.CountOwned(ctx, s.pool, dbsqlc.CountOwnedParams{Owner: owner, MaxCount: int64(limit)})
	return int(n), err
}

// ScanContaining calls fn, in order, with each message of m up to and including
// message upto that contains one of needles (following m's fork chain). Only those
// messages leave Postgres: a scan for a few kinds of events in a long stream (a fork
// looking for its source's manifest entries) costs one pass in the database.
func (s *Store) ScanContaining(ctx context.Context, m *Meta, upto int64, needles [][]byte, fn func(seq int64, data []byte) error) error {
	upto = min(upto, m.Tail.Seq)
	// the chain, from m down to the stream whose messages come first
	type segment struct{ id, after, to int64 }
	var segs []segment
	for {
		if !m.IsFork() {
			segs = append(segs, segment{m.ID, 0, upto})
			break
		}
		if upto > m.ForkSeq {
			segs = append(segs, segment{m.ID, m.ForkSeq, upto})
		}
		upto = min(upto, m.ForkSeq)
		src, err := s.lookupByID(ctx, m.ForkSourceID)
		if err != nil {
			return fmt.Errorf("streamdb: fork source of %s: %w", m.Path, err)
		}
		m = src
	}
	for i := len(segs) - 1; i >= 0; i-- {
		g := segs[i]
		if g.to <= g.after {
			continue
		}
		rows, err := queries.MessagesContaining(ctx, s.pool, dbsqlc.MessagesContainingParams{
			StreamID: g.id, AfterSeq: g.after, ToSeq: g.to, Needles: needles})
		if err != nil {
			return fmt.Errorf("streamdb: scan messages: %w", err)
		}
		for _, r := range rows {
			if err := fn(r.Seq, r.Data); err != nil {
				return err
			}
		}
	}
	return nil
}
