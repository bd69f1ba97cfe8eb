package streamdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/internal/testwait"
)

func TestCreateNew(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)

	m, created, err := s.Create(ctx, "/v1/stream/a", CreateConfig{}, nil)
	require.NoError(t, err)
	require.True(t, created)
	require.NotZero(t, m.ID)
	require.Equal(t, "/v1/stream/a", m.Path)
	require.Equal(t, DefaultContentType, m.ContentType)
	require.Equal(t, Start, m.Tail)
	require.False(t, m.Closed)
	require.False(t, m.IsFork())
	require.Nil(t, m.TTLSeconds)
	require.Nil(t, m.ExpiresAt)

	got := lookup(t, s, "/v1/stream/a")
	require.Equal(t, m.ID, got.ID)
	require.Equal(t, DefaultContentType, got.ContentType)
	require.Equal(t, Start, got.Tail)
	require.Empty(t, readAll(t, s, "/v1/stream/a"))

	_, err = s.Lookup(ctx, "/v1/stream/missing")
	require.ErrorIs(t, err, ErrNotFound)
}

func TestCreateIdempotent(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	exp := time.Now().Add(time.Hour).Truncate(time.Second)

	cases := []struct {
		path string
		cfg  CreateConfig
		same []CreateConfig // configurations that count as the same stream
		diff []CreateConfig // configurations that conflict
	}{
		{
			path: "/plain",
			cfg:  CreateConfig{ContentType: "text/plain"},
			same: []CreateConfig{{ContentType: "text/plain"}, {ContentType: "TEXT/PLAIN; charset=utf-8"}},
			diff: []CreateConfig{
				{ContentType: "application/json"},
				{},
				{ContentType: "text/plain", TTLSeconds: ptr[int64](60)},
				{ContentType: "text/plain", ExpiresAt: &exp},
				{ContentType: "text/plain", Closed: true},
			},
		},
		{
			path: "/default",
			cfg:  CreateConfig{},
			same: []CreateConfig{{}, {ContentType: DefaultContentType}},
			diff: []CreateConfig{{ContentType: "text/plain"}},
		},
		{
			path: "/ttl",
			cfg:  CreateConfig{ContentType: "text/plain", TTLSeconds: ptr[int64](60)},
			same: []CreateConfig{{ContentType: "text/plain", TTLSeconds: ptr[int64](60)}},
			diff: []CreateConfig{
				{ContentType: "text/plain", TTLSeconds: ptr[int64](61)},
				{ContentType: "text/plain"},
				{ContentType: "text/plain", ExpiresAt: &exp},
			},
		},
		{
			path: "/expires",
			cfg:  CreateConfig{ContentType: "text/plain", ExpiresAt: &exp},
			same: []CreateConfig{{ContentType: "text/plain", ExpiresAt: ptr(exp.In(time.FixedZone("x", 3600)))}},
			diff: []CreateConfig{
				{ContentType: "text/plain", ExpiresAt: ptr(exp.Add(time.Second))},
				{ContentType: "text/plain"},
			},
		},
		{
			path: "/closed",
			cfg:  CreateConfig{ContentType: "text/plain", Closed: true},
			same: []CreateConfig{{ContentType: "text/plain", Closed: true}},
			diff: []CreateConfig{{ContentType: "text/plain"}},
		},
	}
	for _, tc := range cases {
		first, created, err := s.Create(ctx, tc.path, tc.cfg, nil)
		require.NoError(t, err)
		require.True(t, created, tc.path)
		for _, cfg := range tc.same {
			m, created, err := s.Create(ctx, tc.path, cfg, msgs("ignored"))
			require.NoError(t, err, "%s %+v", tc.path, cfg)
			require.False(t, created, "%s %+v", tc.path, cfg)
			require.Equal(t, first.ID, m.ID)
			require.Equal(t, first.Tail, m.Tail, "an idempotent create writes nothing")
		}
		for _, cfg := range tc.diff {
			m, created, err := s.Create(ctx, tc.path, cfg, nil)
			require.ErrorIs(t, err, ErrExists, "%s %+v", tc.path, cfg)
			require.False(t, created)
			require.Nil(t, m)
		}
		require.Equal(t, first.Tail, lookup(t, s, tc.path).Tail)
	}

	// A stream closed after its creation no longer matches an open create, and vice versa.
	create(t, s, "/closed-later", CreateConfig{ContentType: "text/plain"})
	_, err := s.Append(ctx, &AppendRequest{Path: "/closed-later", Close: true})
	require.NoError(t, err)
	_, _, err = s.Create(ctx, "/closed-later", CreateConfig{ContentType: "text/plain"}, nil)
	require.ErrorIs(t, err, ErrExists)
	_, created, err := s.Create(ctx, "/closed-later", CreateConfig{ContentType: "text/plain", Closed: true}, nil)
	require.NoError(t, err)
	require.False(t, created)
}

// Stream-Expires-At is parsed with nanosecond precision, Postgres keeps microseconds: a
// repeated create with the very same timestamp is still the same configuration.
func TestCreateIdempotentSubMicrosecondExpiry(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	exp, err := time.Parse(time.RFC3339Nano, "2099-01-02T03:04:05.123456789Z")
	require.NoError(t, err)
	first, created, err := s.Create(ctx, "/exp", CreateConfig{ExpiresAt: &exp}, nil)
	require.NoError(t, err)
	require.True(t, created)
	again := exp
	m, created, err := s.Create(ctx, "/exp", CreateConfig{ExpiresAt: &again}, nil)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, first.ID, m.ID)
}

// Concurrent identical creates (a retried PUT) all succeed: one creates, the others
// find the stream.
func TestCreateConcurrentSamePath(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	const n = 8
	for round := range 5 {
		path := fmt.Sprintf("/race/%d", round)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var createdN int
		ids := map[int64]bool{}
		start := make(chan struct{})
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				m, created, err := s.Create(ctx, path, CreateConfig{ContentType: "text/plain"}, msgs("x"))
				errs[i] = err
				if err == nil {
					mu.Lock()
					ids[m.ID] = true
					if created {
						createdN++
					}
					mu.Unlock()
				}
			}()
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		require.Equal(t, 1, createdN)
		require.Len(t, ids, 1)
		require.Equal(t, []string{"x"}, datas(readAll(t, s, path)))
	}
}

func TestCreateWithInitialMessages(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)

	m, created, err := s.Create(ctx, "/init", CreateConfig{ContentType: "text/plain"}, msgs("hello", " ", "world"))
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, off(3, 11), m.Tail)
	require.False(t, m.Closed)
	got := readAll(t, s, "/init")
	require.Equal(t, []string{"hello", " ", "world"}, datas(got))
	require.Equal(t, []Offset{off(1, 5), off(2, 6), off(3, 11)}, []Offset{got[0].End, got[1].End, got[2].End})

	// JSON: the caller splits the body, [] creates an empty stream.
	parts, err := SplitJSON([]byte(`[{"a":1}, [2], "three"]`))
	require.NoError(t, err)
	m, _, err = s.Create(ctx, "/json", CreateConfig{ContentType: "application/json"}, parts)
	require.NoError(t, err)
	require.Equal(t, int64(3), m.Tail.Seq)
	require.Equal(t, `[{"a":1},[2],"three"]`, string(JoinJSON(toBytes(readAll(t, s, "/json")))))
	empty, err := SplitJSON([]byte(`[]`))
	require.NoError(t, err)
	m, created, err = s.Create(ctx, "/json-empty", CreateConfig{ContentType: "application/json"}, empty)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, Start, m.Tail)
}

func toBytes(ms []Message) [][]byte {
	out := make([][]byte, len(ms))
	for i, m := range ms {
		out[i] = m.Data
	}
	return out
}

func TestCreateClosed(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)

	m, created, err := s.Create(ctx, "/closed-empty", CreateConfig{Closed: true}, nil)
	require.NoError(t, err)
	require.True(t, created)
	require.True(t, m.Closed)
	require.Equal(t, Start, m.Tail)
	require.True(t, lookup(t, s, "/closed-empty").Closed)

	m, created, err = s.Create(ctx, "/closed-data", CreateConfig{ContentType: "text/plain", Closed: true}, msgs("final"))
	require.NoError(t, err)
	require.True(t, created)
	require.True(t, m.Closed)
	require.Equal(t, off(1, 5), m.Tail)
	require.Equal(t, []string{"final"}, datas(readAll(t, s, "/closed-data")))

	_, err = s.Append(ctx, &AppendRequest{Path: "/closed-data", Messages: msgs("more")})
	var ce *ClosedError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, off(1, 5), ce.Tail)
}

func TestDeleteAndRecreate(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)

	old := create(t, s, "/re", CreateConfig{ContentType: "text/plain"}, "old")
	p := func(seq int64) *ProducerTuple { return &ProducerTuple{ID: "p", Epoch: 3, Seq: seq} }
	for seq := range int64(3) {
		_, err := s.Append(ctx, &AppendRequest{Path: "/re", Messages: msgs(fmt.Sprint(seq)), Producer: p(seq), StreamSeq: "5"})
		if seq == 0 {
			require.NoError(t, err)
		} else {
			require.ErrorIs(t, err, ErrStreamSeq) // the Stream-Seq stays "5"
			_, err = s.Append(ctx, &AppendRequest{Path: "/re", Messages: msgs(fmt.Sprint(seq)), Producer: p(seq)})
			require.NoError(t, err)
		}
	}
	_, err := s.Append(ctx, &AppendRequest{Path: "/re", Dedupe: &Dedupe{Key: "k", Hash: []byte{1}, Ref: "r1"}, Messages: msgs("keyed")})
	require.NoError(t, err)

	require.NoError(t, s.Delete(ctx, "/re", nil))
	_, err = s.Lookup(ctx, "/re")
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorIs(t, s.Delete(ctx, "/re", nil), ErrNotFound)
	_, err = s.Append(ctx, &AppendRequest{Path: "/re", Messages: msgs("x")})
	require.ErrorIs(t, err, ErrNotFound)
	require.Zero(t, countRows(t, s, `SELECT count(*) FROM stream_messages WHERE stream_id = $1`, old.ID))
	require.Zero(t, countRows(t, s, `SELECT count(*) FROM stream_producers WHERE stream_id = $1`, old.ID))
	require.Zero(t, countRows(t, s, `SELECT count(*) FROM stream_dedupe WHERE stream_id = $1`, old.ID))

	// The new stream may even have another configuration.
	m, created, err := s.Create(ctx, "/re", CreateConfig{ContentType: "application/json"}, nil)
	require.NoError(t, err)
	require.True(t, created)
	require.NotEqual(t, old.ID, m.ID)
	require.Equal(t, Start, m.Tail)
	require.Empty(t, readAll(t, s, "/re"))

	// No producer state survived: the old producer's next seq is a gap, seq 0 is new data.
	_, err = s.Append(ctx, &AppendRequest{Path: "/re", Messages: msgs(`3`), Producer: p(3)})
	var gap *SeqGapError
	require.ErrorAs(t, err, &gap)
	require.Equal(t, SeqGapError{Expected: 0, Received: 3}, *gap)
	res, err := s.Append(ctx, &AppendRequest{Path: "/re", Messages: msgs(`0`), Producer: p(0)})
	require.NoError(t, err)
	require.False(t, res.Duplicate)
	require.Equal(t, off(1, 1), res.Tail)
	// No Stream-Seq either, and no dedupe key.
	_, err = s.Append(ctx, &AppendRequest{Path: "/re", Messages: msgs(`1`), StreamSeq: "1"})
	require.NoError(t, err)
	res, err = s.Append(ctx, &AppendRequest{Path: "/re", Dedupe: &Dedupe{Key: "k", Hash: []byte{2}, Ref: "r2"}, Messages: msgs(`"k"`)})
	require.NoError(t, err)
	require.False(t, res.Duplicate)
	require.Equal(t, []string{`0`, `1`, `"k"`}, datas(readAll(t, s, "/re")))
}

func TestWithTxCommitsTogether(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	_, err := s.DB().Exec(ctx, `CREATE TABLE side (id int PRIMARY KEY, note text)`)
	require.NoError(t, err)
	m := create(t, s, "/tx", CreateConfig{ContentType: "text/plain"}, "a")

	type waited struct {
		res WaitResult
		err error
	}
	woke := make(chan waited, 1)
	go func() {
		r, err := s.Wait(ctx, m, m.Tail)
		woke <- waited{r, err}
	}()
	testwait.Until(t, "the reader to park", func() bool { return s.Watched() == 1 }, 10*time.Second)

	err = s.WithTx(ctx, func(ctx context.Context, tx *Tx) error {
		res, err := tx.Append(ctx, &AppendRequest{Path: "/tx", Messages: msgs("b", "c")})
		if err != nil {
			return err
		}
		require.Equal(t, off(3, 3), res.Tail)
		if _, err := tx.Exec(ctx, `INSERT INTO side VALUES (1, 'with b and c')`); err != nil {
			return err
		}
		// Nothing is visible outside the transaction yet, and nobody was woken.
		require.Equal(t, off(1, 1), lookup(t, s, "/tx").Tail)
		require.Zero(t, countRows(t, s, `SELECT count(*) FROM side`))
		select {
		case w := <-woke:
			t.Fatalf("reader woken before commit: %+v", w)
		default:
		}
		_, st := s.notifier.current(m.ID)
		require.False(t, st.known && st.tail.Seq > 1, "published before commit: %+v", st)
		return nil
	})
	require.NoError(t, err)

	w := recv(t, woke)
	require.NoError(t, w.err)
	require.Equal(t, WaitResult{Tail: off(3, 3)}, w.res)
	require.Equal(t, []string{"a", "b", "c"}, datas(readAll(t, s, "/tx")))
	require.Equal(t, 1, countRows(t, s, `SELECT count(*) FROM side WHERE note = 'with b and c'`))
}

func TestWithTxRollsBack(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	_, err := s.DB().Exec(ctx, `CREATE TABLE side (id int PRIMARY KEY)`)
	require.NoError(t, err)
	m := create(t, s, "/tx", CreateConfig{ContentType: "text/plain"}, "a")

	woke := make(chan error, 1)
	waitCtx, cancelWait := context.WithCancel(ctx)
	defer cancelWait()
	go func() {
		_, err := s.Wait(waitCtx, m, m.Tail)
		woke <- err
	}()
	testwait.Until(t, "the reader to park", func() bool { return s.Watched() == 1 }, 10*time.Second)

	boom := errors.New("caller changed its mind")
	err = s.WithTx(ctx, func(ctx context.Context, tx *Tx) error {
		if _, err := tx.Append(ctx, &AppendRequest{Path: "/tx", Messages: msgs("b")}); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO side VALUES (1)`); err != nil {
			return err
		}
		if _, _, err := tx.Create(ctx, "/tx-new", CreateConfig{}, msgs("n")); err != nil {
			return err
		}
		return fmt.Errorf("wrapped: %w", boom)
	})
	require.ErrorIs(t, err, boom)

	got := lookup(t, s, "/tx")
	require.Equal(t, off(1, 1), got.Tail)
	require.Equal(t, []string{"a"}, datas(readAll(t, s, "/tx")))
	require.Zero(t, countRows(t, s, `SELECT count(*) FROM side`))
	_, err = s.Lookup(ctx, "/tx-new")
	require.ErrorIs(t, err, ErrNotFound)
	require.Equal(t, 1, countRows(t, s, `SELECT count(*) FROM stream_messages`))

	// The parked reader was not told about the rolled-back append.
	_, st := s.notifier.current(m.ID)
	require.False(t, st.known && st.tail.Seq > 1, "a rollback was published: %+v", st)
	select {
	case err := <-woke:
		t.Fatalf("reader woken by a rolled-back transaction: %v", err)
	default:
	}
	// It is woken by the next real append.
	appendMsgs(t, s, "/tx", "b")
	require.NoError(t, recv(t, woke))
}

// An append error inside WithTx leaves the transaction usable: the caller may carry on.
func TestWithTxAppendErrorKeepsTransaction(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	create(t, s, "/ok", CreateConfig{ContentType: "text/plain"})
	err := s.WithTx(ctx, func(ctx context.Context, tx *Tx) error {
		_, err := tx.Append(ctx, &AppendRequest{Path: "/missing", Messages: msgs("x")})
		require.ErrorIs(t, err, ErrNotFound)
		_, err = tx.Append(ctx, &AppendRequest{Path: "/ok", ContentType: "application/json", Messages: msgs("1")})
		require.ErrorIs(t, err, ErrContentType)
		_, err = tx.Append(ctx, &AppendRequest{Path: "/ok", Messages: msgs("y")})
		return err
	})
	require.NoError(t, err)
	require.Equal(t, []string{"y"}, datas(readAll(t, s, "/ok")))
}

func TestReadPagination(t *testing.T) {
	t.Parallel()
	const budget = 10
	s := newStore(t, Options{MaxReadBytes: budget})
	ctx := testCtx(t)

	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	var want [][]byte
	for _, n := range []int{1, 3, 4, 2, 25, 1, 1, 1, 9, 10, 11, 5} { // 25 and 11 exceed the budget
		want = append(want, bytes.Repeat([]byte{byte('a' + len(want))}, n))
	}
	want = append(want, all) // every byte value
	create(t, s, "/pages", CreateConfig{})
	var full []byte
	for _, w := range want {
		_, err := s.Append(ctx, &AppendRequest{Path: "/pages", Messages: [][]byte{w}})
		require.NoError(t, err)
		full = append(full, w...)
	}

	m := lookup(t, s, "/pages")
	require.Equal(t, Offset{Seq: int64(len(want)), Pos: int64(len(full))}, m.Tail)

	// Page through from every offset a reader can hold, not only from the start.
	var offsets []Offset
	offsets = append(offsets, Start)
	var pos int64
	for i, w := range want {
		pos += int64(len(w))
		offsets = append(offsets, off(int64(i+1), pos))
	}
	for i, from := range offsets {
		got := []byte{}
		gotMsgs := [][]byte{}
		cur := from
		for cur.Seq < m.Tail.Seq {
			page, err := s.Read(ctx, m, cur, m.Tail)
			require.NoError(t, err)
			require.NotEmpty(t, page, "from %v", cur)
			size := 0
			for _, msg := range page {
				size += len(msg.Data)
				require.Equal(t, cur.Seq+1, msg.End.Seq)
				require.Equal(t, cur.Pos+int64(len(msg.Data)), msg.End.Pos)
				cur = msg.End
				got = append(got, msg.Data...)
				gotMsgs = append(gotMsgs, msg.Data)
			}
			require.True(t, len(page) == 1 || size <= budget, "page of %d messages, %d bytes, over the budget", len(page), size)
		}
		require.Equal(t, m.Tail, cur)
		require.Equal(t, want[i:], gotMsgs, "from %v", from)
		start := 0
		for _, w := range want[:i] {
			start += len(w)
		}
		require.Equal(t, full[start:], got)
	}

	// A message larger than the budget comes whole, alone.
	page, err := s.Read(ctx, m, off(4, 10), m.Tail)
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, bytes.Repeat([]byte{'e'}, 25), page[0].Data)
	require.Equal(t, off(5, 35), page[0].End)

	// Reads at or past the tail, or up to an earlier tail, return nothing more.
	for _, from := range []Offset{m.Tail, off(m.Tail.Seq+1, 0), off(1000, 1000)} {
		page, err := s.Read(ctx, m, from, m.Tail)
		require.NoError(t, err)
		require.Empty(t, page)
	}
	page, err = s.Read(ctx, m, Start, off(2, 4))
	require.NoError(t, err)
	require.Equal(t, []string{"a", "bbb"}, datas(page))
}

func TestReadYourWrites(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	create(t, s, "/ryw", CreateConfig{ContentType: "text/plain"})
	var want []string
	for i := range 20 {
		p := fmt.Sprintf("m%d", i)
		want = append(want, p)
		res := appendMsgs(t, s, "/ryw", p)
		m := lookup(t, s, "/ryw")
		require.Equal(t, res.Tail, m.Tail)
		got, err := s.Read(ctx, m, Start, m.Tail)
		require.NoError(t, err)
		require.Equal(t, want, datas(got))
	}
}

// Close lets appends that are already queued finish instead of failing them, and
// Append after Close reports ErrClosed.
func TestCloseFinishesQueuedAppends(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	s, err := Open(context.Background(), pool, Options{Lanes: 1, SweepInterval: -1})
	require.NoError(t, err)
	defer s.Close()
	ctx := testCtx(t)
	create(t, s, "/q", CreateConfig{ContentType: "text/plain"})

	// Hold the stream's row lock so that the lane's transaction blocks in Postgres.
	blocker, err := pool.Begin(ctx)
	require.NoError(t, err)
	_, err = blocker.Exec(ctx, `SELECT 1 FROM streams WHERE path = '/q' FOR UPDATE`)
	require.NoError(t, err)

	// Queue appends directly on the lane, from this goroutine, so that the race detector
	// sees them happen before Close closes the channel.
	const n = 5
	ps := make([]*pending, n)
	for i := range ps {
		ps[i] = &pending{req: &AppendRequest{Path: "/q", Messages: msgs(fmt.Sprint(i))}, done: make(chan struct{})}
		s.lanes[0].ch <- ps[i]
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	// Release the lock only once Close has closed the lanes and the lane's transaction
	// waits for the lock in Postgres: the queued appends then finish after Close began.
	testwait.Until(t, "Close to close the lanes", func() bool {
		s.closing.RLock()
		defer s.closing.RUnlock()
		return s.closed
	})
	testwait.Until(t, "the lane's transaction to wait for the row lock", func() bool { return lockWaiters(t, s) == 1 })
	require.NoError(t, blocker.Rollback(ctx))
	recv(t, closed)

	for i, p := range ps {
		recv(t, p.done)
		require.NoError(t, p.err, "queued append %d", i)
	}
	require.Equal(t, n, countRows(t, s, `SELECT count(*) FROM stream_messages`))

	_, err = s.Append(ctx, &AppendRequest{Path: "/q", Messages: msgs("late")})
	require.ErrorIs(t, err, ErrClosed)
	s.Close() // idempotent
}
