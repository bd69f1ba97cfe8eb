package streamdb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/singleflight"

	"github.com/entityd/entityd/streamdb/internal/dbsqlc"
)

// flightGroup coalesces identical concurrent reads: when a change wakes ten thousand
// readers parked at the same offset, Postgres answers one query.
type flightGroup = singleflight.Group

// Message is one stored message and the offset right after it.
type Message struct {
	Data []byte
	End  Offset
}

// Lookup returns the metadata of a readable stream. A stream past its TTL or Expires-At
// is ErrNotFound (ErrGone while forks still read through it); a soft-deleted one ErrGone.
func (s *Store) Lookup(ctx context.Context, path string) (*Meta, error) {
	row, err := queries.MetaByPath(ctx, s.pool, path)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("streamdb: look up stream: %w", err)
	}
	m := metaOf(row.Stream, row.ForkSourcePath)
	if err := liveness(m, s.clock.Now()); err != nil {
		return nil, err
	}
	return m, nil
}

func liveness(m *Meta, now time.Time) error {
	if m.SoftDeleted {
		return ErrGone
	}
	if m.Expired(now) {
		if m.Refcount > 0 {
			return ErrGone
		}
		return ErrNotFound
	}
	return nil
}

func (s *Store) lookupByID(ctx context.Context, id int64) (*Meta, error) {
	row, err := queries.MetaByID(ctx, s.pool, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return metaOf(row.Stream, row.ForkSourcePath), nil
}

// Touch refreshes the idle window of a stream with a TTL; reads call it, HEAD does not.
func (s *Store) Touch(ctx context.Context, m *Meta) error {
	if !m.HasTTL() {
		return nil
	}
	return queries.Touch(ctx, s.pool, dbsqlc.TouchParams{ID: m.ID, Now: s.clock.SQL()})
}

// Read returns the messages after from up to and including tail, at most MaxReadBytes
// of them (but always at least one message when any exists). Reads of a fork stitch the
// inherited prefix from its source chain and the fork's own messages.
func (s *Store) Read(ctx context.Context, m *Meta, from, tail Offset) ([]Message, error) {
	if from.Seq >= tail.Seq {
		return nil, nil
	}
	if msgs, ok := s.fromRecent(m.ID, from, tail); ok {
		return msgs, nil
	}
	key := strconv.FormatInt(m.ID, 10) + ":" + strconv.FormatInt(from.Seq, 10) + ":" + strconv.FormatInt(tail.Seq, 10)
	v, err, _ := s.reads.Do(key, func() (any, error) {
		// shared by every reader waiting on this key: one caller leaving must not fail the rest
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		return s.readRange(ctx, m, from, tail.Seq, int64(s.opts.MaxReadBytes))
	})
	if err != nil {
		return nil, err
	}
	return v.([]Message), nil
}

func (s *Store) readRange(ctx context.Context, m *Meta, from Offset, toSeq, budget int64) ([]Message, error) {
	var out []Message
	if m.IsFork() && from.Seq < m.ForkSeq {
		src, err := s.lookupByID(ctx, m.ForkSourceID)
		if err != nil {
			return nil, fmt.Errorf("streamdb: fork source of %s: %w", m.Path, err)
		}
		inherited, err := s.readRange(ctx, src, from, min(toSeq, m.ForkSeq), budget)
		if err != nil {
			return nil, err
		}
		out = inherited
		for _, msg := range inherited {
			budget -= int64(len(msg.Data))
		}
		if len(out) > 0 {
			from = out[len(out)-1].End
		}
		if budget <= 0 || from.Seq < min(toSeq, m.ForkSeq) {
			return out, nil
		}
	}
	if toSeq <= from.Seq {
		return out, nil
	}
	// end_pos is cumulative, so a byte budget is a bound on end_pos; the first message
	// is always returned, however large. That bound is a filter, not an index bound: past
	// the budget the index scan would read and discard every message up to toSeq, so a
	// page from the start of a long stream would cost as much as the stream. The seq
	// range is bounded as well, by how many messages the budget holds at the stream's
	// mean size (with room to spare): a page then costs the same wherever it starts, and
	// where messages are smaller than the mean it is merely shorter.
	toSeq = min(toSeq, from.Seq+pageSpan(m, budget))
	rows, err := queries.ReadRange(ctx, s.pool, dbsqlc.ReadRangeParams{
		StreamID: m.ID, AfterSeq: from.Seq, ToSeq: toSeq, MaxEndPos: from.Pos + budget})
	if err != nil {
		return nil, fmt.Errorf("streamdb: read messages: %w", err)
	}
	expect := from.Seq + 1
	for _, r := range rows {
		if r.Seq != expect {
			break // the budget cut a run short; never skip over a message
		}
		expect++
		out = append(out, Message{Data: r.Data, End: Offset{Seq: r.Seq, Pos: r.EndPos}})
	}
	return out, nil
}

// pageSpan is how many messages a read of budget bytes may need to look at: the budget
// over the stream's mean message size, a quarter more, and 64 more for small pages.
func pageSpan(m *Meta, budget int64) int64 {
	if m.Tail.Seq <= 0 || m.Tail.Pos <= 0 {
		return math.MaxInt64 / 2
	}
	n := budget / max(1, m.Tail.Pos/m.Tail.Seq)
	return n + n/4 + 64
}

// fromRecent serves (from, tail] from the messages of the stream's latest commit in this
// process, when they cover exactly that range: the common case of readers parked at the
// tail and woken by that commit.
func (s *Store) fromRecent(id int64, from, tail Offset) ([]Message, bool) {
	_, st := s.notifier.current(id)
	r := st.recent
	if !st.known || len(r) == 0 || st.tail.Seq != tail.Seq || r[len(r)-1].End.Seq != tail.Seq {
		return nil, false
	}
	first := r[0].End.Seq - 1 // the offset the run starts after
	if from.Seq < first {
		return nil, false
	}
	return r[from.Seq-first:], true
}

// WaitResult is the stream state that ended a Wait.
type WaitResult struct {
	Tail   Offset
	Closed bool
}

// Wait blocks until the stream has messages after from or is closed, and returns its
// state then. It returns ctx's error when ctx ends first and ErrNotFound when the stream
// is deleted meanwhile. Waiting costs no database work: commits in this process, and
// NOTIFYs from others, wake the waiter with the new tail.
func (s *Store) Wait(ctx context.Context, m *Meta, from Offset) (WaitResult, error) {
	s.notifier.acquire(m.ID)
	defer s.notifier.release(m.ID)
	for {
		ch, st := s.notifier.current(m.ID)
		if !st.known {
			var err error
			st, err = s.freshState(ctx, m.ID)
			if err != nil {
				return WaitResult{}, err
			}
		}
		if st.gone {
			return WaitResult{}, ErrNotFound
		}
		if st.tail.Seq > from.Seq || st.closed {
			return WaitResult{Tail: st.tail, Closed: st.closed}, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return WaitResult{Tail: st.tail, Closed: st.closed}, ctx.Err()
		}
	}
}

func (s *Store) freshState(ctx context.Context, id int64) (tailState, error) {
	v, err, _ := s.reads.Do("state:"+strconv.FormatInt(id, 10), func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		row, err := queries.FreshState(ctx, s.pool, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return tailState{gone: true, known: true}, nil
		}
		if err != nil {
			return tailState{}, err
		}
		return tailState{tail: Offset{Seq: row.TailSeq, Pos: row.TailPos}, closed: row.Closed, gone: row.SoftDeleted, known: true}, nil
	})
	if err != nil {
		return tailState{}, err
	}
	return v.(tailState), nil
}
