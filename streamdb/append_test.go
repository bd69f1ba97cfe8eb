package streamdb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testwait"
)

func TestAppendOffsets(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	create(t, s, "/a", CreateConfig{ContentType: "text/plain"})

	res := appendMsgs(t, s, "/a", "hello")
	require.Equal(t, off(1, 5), res.Tail)
	require.Equal(t, []Offset{off(1, 5)}, res.Offsets)
	require.False(t, res.Closed)
	require.False(t, res.Duplicate)

	res = appendMsgs(t, s, "/a", "a", "bc", "", "def")
	require.Equal(t, []Offset{off(2, 6), off(3, 8), off(4, 8), off(5, 11)}, res.Offsets)
	require.Equal(t, off(5, 11), res.Tail)

	got := readAll(t, s, "/a")
	require.Equal(t, []string{"hello", "a", "bc", "", "def"}, datas(got))
	for i, want := range []Offset{off(1, 5), off(2, 6), off(3, 8), off(4, 8), off(5, 11)} {
		require.Equal(t, want, got[i].End)
	}
	m := lookup(t, s, "/a")
	require.Equal(t, off(5, 11), m.Tail)

	// Reading from any returned offset gives exactly what followed it.
	require.Equal(t, []string{"", "def"}, datas(readFrom(t, s, "/a", off(3, 8))))
	require.Equal(t, []string{"def"}, datas(readFrom(t, s, "/a", off(4, 8))))

	// ContentType is compared by media type; parameters and case do not matter.
	res, err := s.Append(ctx, &AppendRequest{Path: "/a", ContentType: "Text/Plain; charset=utf-8", Messages: msgs("!")})
	require.NoError(t, err)
	require.Equal(t, off(6, 12), res.Tail)
}

func TestAppendJSONMessagesGetOwnOffsets(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	create(t, s, "/j", CreateConfig{ContentType: "application/json"})

	parts, err := SplitJSON([]byte(`[{"a":1}, [2,3], "x"]`))
	require.NoError(t, err)
	res, err := s.Append(ctx, &AppendRequest{Path: "/j", ContentType: "application/json", Messages: parts})
	require.NoError(t, err)
	require.Equal(t, []Offset{off(1, 7), off(2, 12), off(3, 15)}, res.Offsets)

	one, err := SplitJSON([]byte(`{"b":2}`))
	require.NoError(t, err)
	res, err = s.Append(ctx, &AppendRequest{Path: "/j", ContentType: "application/json; charset=utf-8", Messages: one})
	require.NoError(t, err)
	require.Equal(t, []Offset{off(4, 22)}, res.Offsets)

	got := readAll(t, s, "/j")
	require.Equal(t, `[{"a":1},[2,3],"x",{"b":2}]`, string(JoinJSON(toBytes(got))))
	require.Equal(t, `["x",{"b":2}]`, string(JoinJSON(toBytes(readFrom(t, s, "/j", off(2, 12))))))
}

func TestAppendRefusals(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	create(t, s, "/r", CreateConfig{ContentType: "text/plain"}, "x")

	_, err := s.Append(ctx, &AppendRequest{Path: "/missing", Messages: msgs("x")})
	require.ErrorIs(t, err, ErrNotFound)
	_, err = s.Append(ctx, &AppendRequest{Path: "/missing", Close: true})
	require.ErrorIs(t, err, ErrNotFound)

	_, err = s.Append(ctx, &AppendRequest{Path: "/r", ContentType: "application/json", Messages: msgs("1")})
	require.ErrorIs(t, err, ErrContentType)

	_, err = s.Append(ctx, &AppendRequest{Path: "/r"})
	require.ErrorIs(t, err, ErrEmptyAppend)
	_, err = s.Append(ctx, &AppendRequest{Path: "/r", Messages: [][]byte{}})
	require.ErrorIs(t, err, ErrEmptyAppend)
	_, err = s.Append(ctx, &AppendRequest{Path: "/r", Producer: &ProducerTuple{ID: "p"}})
	require.ErrorIs(t, err, ErrEmptyAppend)

	// A content type on a close-only request is ignored.
	res, err := s.Append(ctx, &AppendRequest{Path: "/r", ContentType: "application/json", Close: true})
	require.NoError(t, err)
	require.True(t, res.Closed)

	// None of the refusals wrote anything.
	require.Equal(t, []string{"x"}, datas(readAll(t, s, "/r")))
	require.Zero(t, countRows(t, s, `SELECT count(*) FROM stream_producers`))
}

func TestAppendStreamSeq(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	seqAppend := func(path, seq string) error {
		_, err := s.Append(ctx, &AppendRequest{Path: path, Messages: msgs(seq), StreamSeq: seq})
		return err
	}

	create(t, s, "/s1", CreateConfig{})
	require.NoError(t, seqAppend("/s1", "2"))
	require.ErrorIs(t, seqAppend("/s1", "10"), ErrStreamSeq, `"10" sorts before "2" byte-wise`)
	require.ErrorIs(t, seqAppend("/s1", "2"), ErrStreamSeq, "equal is refused")
	require.ErrorIs(t, seqAppend("/s1", "1"), ErrStreamSeq)
	require.NoError(t, seqAppend("/s1", "3"))
	// No Stream-Seq at all is always fine and leaves the last one in place.
	appendMsgs(t, s, "/s1", "plain")
	require.ErrorIs(t, seqAppend("/s1", "3"), ErrStreamSeq)
	require.Equal(t, "3", *lookup(t, s, "/s1").LastStreamSeq)

	create(t, s, "/s2", CreateConfig{})
	require.NoError(t, seqAppend("/s2", "09"))
	require.NoError(t, seqAppend("/s2", "10"))
	require.ErrorIs(t, seqAppend("/s2", "09"), ErrStreamSeq)

	create(t, s, "/s3", CreateConfig{})
	require.NoError(t, seqAppend("/s3", "a"))
	require.ErrorIs(t, seqAppend("/s3", "B"), ErrStreamSeq, `"B" < "a" byte-wise`)
	require.NoError(t, seqAppend("/s3", "ab"))

	require.Equal(t, []string{"2", "3", "plain"}, datas(readAll(t, s, "/s1")))
	require.Equal(t, []string{"09", "10"}, datas(readAll(t, s, "/s2")))
	require.Equal(t, []string{"a", "ab"}, datas(readAll(t, s, "/s3")))

	// Precedence: a closed stream refuses before the content type, the content type
	// before the Stream-Seq.
	_, err := s.Append(ctx, &AppendRequest{Path: "/s2", ContentType: "application/json", Messages: msgs("1"), StreamSeq: "00"})
	require.ErrorIs(t, err, ErrContentType)
	_, err = s.Append(ctx, &AppendRequest{Path: "/s2", Close: true})
	require.NoError(t, err)
	_, err = s.Append(ctx, &AppendRequest{Path: "/s2", ContentType: "application/json", Messages: msgs("1"), StreamSeq: "00"})
	var ce *ClosedError
	require.ErrorAs(t, err, &ce)
}

func TestAppendClose(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	create(t, s, "/c", CreateConfig{ContentType: "text/plain"}, "abc")

	res, err := s.Append(ctx, &AppendRequest{Path: "/c", Close: true})
	require.NoError(t, err)
	require.Equal(t, AppendResult{Tail: off(1, 3), Closed: true, Offsets: []Offset{}}, res)
	require.True(t, lookup(t, s, "/c").Closed)

	// Close-only again is idempotent.
	res, err = s.Append(ctx, &AppendRequest{Path: "/c", Close: true})
	require.NoError(t, err)
	require.True(t, res.Closed)
	require.Equal(t, off(1, 3), res.Tail)

	// Appending (with or without close) is refused with the final tail.
	for _, req := range []*AppendRequest{
		{Path: "/c", Messages: msgs("more")},
		{Path: "/c", Messages: msgs("more"), Close: true},
		{Path: "/c", Producer: &ProducerTuple{ID: "p"}, Close: true},
	} {
		_, err = s.Append(ctx, req)
		var ce *ClosedError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, off(1, 3), ce.Tail)
	}
	require.Equal(t, []string{"abc"}, datas(readAll(t, s, "/c")))

	// Append and close in one request: both or neither.
	create(t, s, "/ac", CreateConfig{ContentType: "text/plain"}, "a")
	res, err = s.Append(ctx, &AppendRequest{Path: "/ac", Messages: msgs("bb", "ccc"), Close: true})
	require.NoError(t, err)
	require.True(t, res.Closed)
	require.Equal(t, []Offset{off(2, 3), off(3, 6)}, res.Offsets)
	require.Equal(t, off(3, 6), res.Tail)
	m := lookup(t, s, "/ac")
	require.True(t, m.Closed)
	require.Equal(t, off(3, 6), m.Tail)
	require.Equal(t, []string{"a", "bb", "ccc"}, datas(readAll(t, s, "/ac")))
	// Repeating it without producer headers is a conflict, not a duplicate.
	_, err = s.Append(ctx, &AppendRequest{Path: "/ac", Messages: msgs("bb", "ccc"), Close: true})
	var ce *ClosedError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, off(3, 6), ce.Tail)

	// A refused append+close does not close the stream.
	create(t, s, "/refused", CreateConfig{ContentType: "text/plain"})
	_, err = s.Append(ctx, &AppendRequest{Path: "/refused", ContentType: "application/json", Messages: msgs("1"), Close: true})
	require.ErrorIs(t, err, ErrContentType)
	require.False(t, lookup(t, s, "/refused").Closed)
}

func TestAppendProducers(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	create(t, s, "/p", CreateConfig{ContentType: "text/plain"})
	send := func(id string, epoch, seq int64, data ...string) (AppendResult, error) {
		return s.Append(ctx, &AppendRequest{Path: "/p", Messages: msgs(data...), Producer: &ProducerTuple{ID: id, Epoch: epoch, Seq: seq}})
	}

	// The first append of a producer must be seq 0.
	_, err := send("p1", 0, 1, "x")
	var gap *SeqGapError
	require.ErrorAs(t, err, &gap)
	require.Equal(t, SeqGapError{Expected: 0, Received: 1}, *gap)

	res, err := send("p1", 0, 0, "a")
	require.NoError(t, err)
	require.False(t, res.Duplicate)
	require.Equal(t, int64(0), res.ProducerEpoch)
	require.Equal(t, int64(0), res.ProducerSeq)
	require.Equal(t, off(1, 1), res.Tail)

	res, err = send("p1", 0, 1, "b")
	require.NoError(t, err)
	require.Equal(t, int64(1), res.ProducerSeq)
	res, err = send("p1", 0, 2, "c")
	require.NoError(t, err)
	require.Equal(t, off(3, 3), res.Tail)

	// Duplicates write nothing and echo the highest accepted seq, not the request's.
	for _, seq := range []int64{0, 1, 2} {
		res, err = send("p1", 0, seq, "dup")
		require.NoError(t, err)
		require.True(t, res.Duplicate, "seq %d", seq)
		require.Equal(t, int64(2), res.ProducerSeq)
		require.Equal(t, int64(0), res.ProducerEpoch)
		require.Equal(t, off(3, 3), res.Tail)
		require.Empty(t, res.Offsets)
	}
	// A duplicate is a duplicate even when its Stream-Seq would regress.
	_, err = s.Append(ctx, &AppendRequest{Path: "/p", Messages: msgs("d"), StreamSeq: "5", Producer: &ProducerTuple{ID: "p1", Seq: 3}})
	require.NoError(t, err)
	res, err = s.Append(ctx, &AppendRequest{Path: "/p", Messages: msgs("d"), StreamSeq: "1", Producer: &ProducerTuple{ID: "p1", Seq: 3}})
	require.NoError(t, err)
	require.True(t, res.Duplicate)

	// A gap names the expected and the received seq.
	_, err = send("p1", 0, 6, "x")
	require.ErrorAs(t, err, &gap)
	require.Equal(t, SeqGapError{Expected: 4, Received: 6}, *gap)

	// Producers are independent of each other.
	res, err = send("p2", 7, 0, "other")
	require.NoError(t, err)
	require.Equal(t, int64(7), res.ProducerEpoch)

	// A new epoch must restart at 0; then it fences the old one.
	_, err = send("p1", 1, 5, "x")
	require.ErrorIs(t, err, ErrEpochSeq)
	res, err = send("p1", 1, 0, "e")
	require.NoError(t, err)
	require.False(t, res.Duplicate)
	require.Equal(t, int64(1), res.ProducerEpoch)
	require.Equal(t, int64(0), res.ProducerSeq)
	_, err = send("p1", 0, 4, "zombie")
	var stale *StaleEpochError
	require.ErrorAs(t, err, &stale)
	require.Equal(t, int64(1), stale.Current)

	require.Equal(t, []string{"a", "b", "c", "d", "other", "e"}, datas(readAll(t, s, "/p")))

	// Close by a producer; a retry of that exact tuple is a duplicate (whatever its body),
	// any other tuple is refused as closed, a stale epoch is still fenced first.
	res, err = s.Append(ctx, &AppendRequest{Path: "/p", Messages: msgs("last"), Close: true, Producer: &ProducerTuple{ID: "p1", Epoch: 1, Seq: 1}})
	require.NoError(t, err)
	require.True(t, res.Closed)
	require.False(t, res.Duplicate)
	tail := res.Tail
	require.Equal(t, off(7, 14), tail)
	m := lookup(t, s, "/p")
	require.Equal(t, &ProducerTuple{ID: "p1", Epoch: 1, Seq: 1}, m.ClosedBy)

	res, err = s.Append(ctx, &AppendRequest{Path: "/p", Messages: msgs("different body"), Close: true, Producer: &ProducerTuple{ID: "p1", Epoch: 1, Seq: 1}})
	require.NoError(t, err)
	require.True(t, res.Duplicate)
	require.True(t, res.Closed)
	require.Equal(t, tail, res.Tail)
	require.Equal(t, int64(1), res.ProducerEpoch)
	require.Equal(t, int64(1), res.ProducerSeq)

	for _, p := range []ProducerTuple{{ID: "p1", Epoch: 1, Seq: 2}, {ID: "p2", Epoch: 7, Seq: 1}, {ID: "p3", Epoch: 0, Seq: 0}} {
		_, err = s.Append(ctx, &AppendRequest{Path: "/p", Messages: msgs("x"), Producer: &p})
		var ce *ClosedError
		require.ErrorAs(t, err, &ce, "%+v", p)
		require.Equal(t, tail, ce.Tail)
	}
	_, err = send("p1", 0, 9, "zombie")
	require.ErrorAs(t, err, &stale)
	require.Equal(t, int64(1), stale.Current)

	require.Equal(t, []string{"a", "b", "c", "d", "other", "e", "last"}, datas(readAll(t, s, "/p")))
}

// A producer's close-only request is a close like any other; its retry is a duplicate.
func TestAppendProducerCloseOnly(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	create(t, s, "/pc", CreateConfig{ContentType: "text/plain"}, "x")
	p := &ProducerTuple{ID: "w", Epoch: 2, Seq: 0}
	res, err := s.Append(ctx, &AppendRequest{Path: "/pc", Close: true, Producer: p})
	require.NoError(t, err)
	require.True(t, res.Closed)
	require.False(t, res.Duplicate)
	res, err = s.Append(ctx, &AppendRequest{Path: "/pc", Close: true, Producer: p})
	require.NoError(t, err)
	require.True(t, res.Duplicate)
	require.True(t, res.Closed)
	require.Equal(t, off(1, 1), res.Tail)
	// The close-only POST without a producer is still idempotent on that stream.
	res, err = s.Append(ctx, &AppendRequest{Path: "/pc", Close: true})
	require.NoError(t, err)
	require.True(t, res.Closed)
}

func TestAppendDedupe(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	create(t, s, "/d", CreateConfig{ContentType: "text/plain"})
	create(t, s, "/d2", CreateConfig{ContentType: "text/plain"})

	res, err := s.Append(ctx, &AppendRequest{Path: "/d", Messages: msgs("one"), Dedupe: &Dedupe{Key: "k1", Hash: []byte("h1"), Ref: "ref-1"}})
	require.NoError(t, err)
	require.False(t, res.Duplicate)
	require.Equal(t, off(1, 3), res.Tail)
	appendMsgs(t, s, "/d", "two")

	// Same key, same hash: the first append's ref, nothing written.
	res, err = s.Append(ctx, &AppendRequest{Path: "/d", Messages: msgs("one"), Dedupe: &Dedupe{Key: "k1", Hash: []byte("h1"), Ref: "ref-2"}})
	require.NoError(t, err)
	require.True(t, res.Duplicate)
	require.Equal(t, "ref-1", res.DedupeRef)
	require.Equal(t, off(2, 6), res.Tail)
	require.Empty(t, res.Offsets)

	// Same key, another request: a conflict.
	_, err = s.Append(ctx, &AppendRequest{Path: "/d", Messages: msgs("uno"), Dedupe: &Dedupe{Key: "k1", Hash: []byte("h2"), Ref: "ref-3"}})
	require.ErrorIs(t, err, ErrDedupeConflict)

	// Keys are per stream.
	res, err = s.Append(ctx, &AppendRequest{Path: "/d2", Messages: msgs("one"), Dedupe: &Dedupe{Key: "k1", Hash: []byte("h9"), Ref: "ref-4"}})
	require.NoError(t, err)
	require.False(t, res.Duplicate)

	// A retry is answered like the first request even after the stream was closed.
	_, err = s.Append(ctx, &AppendRequest{Path: "/d", Close: true})
	require.NoError(t, err)
	res, err = s.Append(ctx, &AppendRequest{Path: "/d", Messages: msgs("one"), Dedupe: &Dedupe{Key: "k1", Hash: []byte("h1")}})
	require.NoError(t, err)
	require.True(t, res.Duplicate)
	require.True(t, res.Closed)
	require.Equal(t, "ref-1", res.DedupeRef)

	require.Equal(t, []string{"one", "two"}, datas(readAll(t, s, "/d")))
	require.Equal(t, []string{"one"}, datas(readAll(t, s, "/d2")))
	require.Equal(t, 2, countRows(t, s, `SELECT count(*) FROM stream_dedupe`))
}

func TestAppendAdmission(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	_, err := s.DB().Exec(ctx, `CREATE TABLE flags (path text PRIMARY KEY, code text NOT NULL)`)
	require.NoError(t, err)
	_, err = s.DB().Exec(ctx, `INSERT INTO flags VALUES ('/frozen', 'frozen'), ('/noted', 'slow-down')`)
	require.NoError(t, err)
	for _, p := range []string{"/frozen", "/noted", "/fine"} {
		create(t, s, p, CreateConfig{ContentType: "text/plain"})
	}

	errFrozen := errors.New("entity is frozen")
	var mu sync.Mutex
	var seen []string
	adm := &Admission{
		// $1 holds the subjects' keys (the stream paths here: no Subject is given); $2
		// and $3 the holders and epochs, unused here.
		SQL: `SELECT f.path, f.code FROM flags f WHERE f.path = ANY($1) AND $2::text[] IS NOT NULL AND $3::bigint[] IS NOT NULL`,
		Judge: func(code string) Verdict {
			mu.Lock()
			seen = append(seen, code)
			mu.Unlock()
			switch code {
			case "frozen":
				return Refused(fmt.Errorf("refused: %w", errFrozen))
			case "elsewhere":
				return Diverted()
			}
			return Admitted(code)
		},
	}

	_, err = s.Append(ctx, &AppendRequest{Path: "/frozen", Messages: msgs("x"), Admission: adm})
	var refused *RefusedError
	require.ErrorAs(t, err, &refused)
	require.ErrorIs(t, err, errFrozen)
	require.Equal(t, "refused: entity is frozen", err.Error())
	require.Empty(t, readAll(t, s, "/frozen"))
	// Not even a close gets through, and the stream stays open.
	_, err = s.Append(ctx, &AppendRequest{Path: "/frozen", Close: true, Admission: adm})
	require.ErrorIs(t, err, errFrozen)
	require.False(t, lookup(t, s, "/frozen").Closed)

	res, err := s.Append(ctx, &AppendRequest{Path: "/noted", Messages: msgs("y"), Admission: adm})
	require.NoError(t, err)
	require.Equal(t, "slow-down", res.Note)
	require.Equal(t, []string{"y"}, datas(readAll(t, s, "/noted")))

	res, err = s.Append(ctx, &AppendRequest{Path: "/fine", Messages: msgs("z"), Admission: adm})
	require.NoError(t, err)
	require.Empty(t, res.Note)
	require.Equal(t, []string{"z"}, datas(readAll(t, s, "/fine")))
	require.Equal(t, []string{"frozen", "frozen", "slow-down"}, seen, "Refuse runs for flagged streams only")

	// The check sees the caller's rows as of the append: unflag and retry.
	_, err = s.DB().Exec(ctx, `DELETE FROM flags WHERE path = '/frozen'`)
	require.NoError(t, err)
	res, err = s.Append(ctx, &AppendRequest{Path: "/frozen", Messages: msgs("x"), Admission: adm})
	require.NoError(t, err)
	require.Equal(t, off(1, 1), res.Tail)

	// A diverted request writes nothing and says so, without an error.
	_, err = s.DB().Exec(ctx, `INSERT INTO flags VALUES ('/fine', 'elsewhere')`)
	require.NoError(t, err)
	res, err = s.Append(ctx, &AppendRequest{Path: "/fine", Messages: msgs("diverted"), Admission: adm,
		Also: []Statement{{SQL: `INSERT INTO flags VALUES ('/also', 'ran')`}}})
	require.NoError(t, err)
	require.True(t, res.Diverted)
	require.Equal(t, []string{"z"}, datas(readAll(t, s, "/fine")), "nothing written")
	var also int
	require.NoError(t, s.DB().QueryRow(ctx, `SELECT count(*) FROM flags WHERE path = '/also'`).Scan(&also))
	require.Zero(t, also, "a diverted request's statements do not run")
	_, err = s.DB().Exec(ctx, `DELETE FROM flags WHERE path = '/fine'`)
	require.NoError(t, err)

	// The check sees each request's subject: its key, holder and epoch.
	errFenced := errors.New("fenced")
	fence := &Admission{
		SQL: `SELECT u.key, 'stale:' || u.holder || '@' || u.epoch FROM unnest($1::text[], $2::text[], $3::bigint[]) AS u(key, holder, epoch)
			WHERE u.epoch <> 2`,
		Judge: func(code string) Verdict { return Refused(fmt.Errorf("%s: %w", code, errFenced)) },
	}
	_, err = s.Append(ctx, &AppendRequest{Path: "/fine", Messages: msgs("old"), Admission: fence,
		Subject: Subject{Key: "row-1", Holder: "h", Epoch: 1}})
	require.ErrorIs(t, err, errFenced)
	require.EqualError(t, err, "stale:h@1: fenced")
	res, err = s.Append(ctx, &AppendRequest{Path: "/fine", Messages: msgs("new"), Admission: fence,
		Subject: Subject{Key: "row-1", Holder: "h", Epoch: 2}})
	require.NoError(t, err)
	require.Empty(t, res.Note)
	require.Equal(t, []string{"z", "new"}, datas(readAll(t, s, "/fine")))
}

// Many writers, few streams: every append lands exactly once, in order per writer, with
// gap-free sequence numbers per stream.
func TestGroupCommitConcurrent(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	const (
		streams    = 8
		goroutines = 64
		perG       = 50
	)
	for i := range streams {
		create(t, s, fmt.Sprintf("/g/%d", i), CreateConfig{ContentType: "text/plain"})
	}

	type ack struct {
		g, i int
		off  Offset
	}
	acks := make([][]ack, goroutines)
	errs := make(chan error, goroutines)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			path := fmt.Sprintf("/g/%d", g%streams)
			for i := range perG {
				res, err := s.Append(ctx, &AppendRequest{Path: path, ContentType: "text/plain", Messages: msgs(fmt.Sprintf("%d:%d", g, i))})
				if err != nil {
					errs <- fmt.Errorf("goroutine %d append %d: %w", g, i, err)
					return
				}
				if len(res.Offsets) != 1 || res.Offsets[0] != res.Tail {
					errs <- fmt.Errorf("goroutine %d append %d: result %+v", g, i, res)
					return
				}
				acks[g] = append(acks[g], ack{g, i, res.Tail})
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	perStream := goroutines / streams * perG
	for st := range streams {
		path := fmt.Sprintf("/g/%d", st)
		got := readAll(t, s, path)
		require.Len(t, got, perStream, path)
		require.Equal(t, int64(perStream), lookup(t, s, path).Tail.Seq)
		next := map[int]int{} // goroutine -> next payload number expected
		byOffset := map[Offset]string{}
		for k, msg := range got {
			require.Equal(t, int64(k+1), msg.End.Seq, "seq gap or duplicate in %s", path)
			gs, is, ok := strings.Cut(string(msg.Data), ":")
			require.True(t, ok)
			g, err := strconv.Atoi(gs)
			require.NoError(t, err)
			i, err := strconv.Atoi(is)
			require.NoError(t, err)
			require.Equal(t, st, g%streams, "message %q in the wrong stream %s", msg.Data, path)
			require.Equal(t, next[g], i, "goroutine %d's messages out of order in %s", g, path)
			next[g]++
			byOffset[msg.End] = string(msg.Data)
		}
		for g := st; g < goroutines; g += streams {
			require.Equal(t, perG, next[g], "goroutine %d in %s", g, path)
			require.Len(t, acks[g], perG)
			for _, a := range acks[g] {
				require.Equal(t, fmt.Sprintf("%d:%d", a.g, a.i), byOffset[a.off], "the offset returned to the writer holds its message")
			}
		}
	}
	require.Equal(t, goroutines*perG, countRows(t, s, `SELECT count(*) FROM stream_messages`))
}

// Requests that share one group-commit transaction do not share their fate: refusals
// write nothing, the others commit.
func TestGroupCommitMixedBatch(t *testing.T) {
	t.Parallel()
	s := newStore(t, Options{Lanes: 1})
	ctx := testCtx(t)
	_, err := s.DB().Exec(ctx, `CREATE TABLE flags (path text PRIMARY KEY, code text NOT NULL)`)
	require.NoError(t, err)
	_, err = s.DB().Exec(ctx, `INSERT INTO flags VALUES ('/frozen', 'frozen')`)
	require.NoError(t, err)
	for _, p := range []string{"/blocker", "/ok1", "/ok2", "/frozen"} {
		create(t, s, p, CreateConfig{ContentType: "text/plain"})
	}
	create(t, s, "/json", CreateConfig{ContentType: "application/json"})
	create(t, s, "/closed", CreateConfig{ContentType: "text/plain", Closed: true})

	// Park the lane on a transaction that waits for a row lock we hold, so that the
	// requests below pile up and go out together in the next transaction.
	blocker, err := s.DB().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = blocker.Rollback(context.WithoutCancel(ctx)) }()
	_, err = blocker.Exec(ctx, `SELECT 1 FROM streams WHERE path = '/blocker' FOR UPDATE`)
	require.NoError(t, err)
	blocked := make(chan error, 1)
	go func() {
		_, err := s.Append(ctx, &AppendRequest{Path: "/blocker", Messages: msgs("b")})
		blocked <- err
	}()
	testwait.Until(t, "the lane to take the append and wait for the lock", func() bool { return len(s.lanes[0].ch) == 0 && lockWaiters(t, s) == 1 }, 10*time.Second)

	errFrozen := errors.New("frozen")
	adm := &Admission{SQL: `SELECT path, code FROM flags WHERE path = ANY($1) AND $2::text[] IS NOT NULL AND $3::bigint[] IS NOT NULL`,
		Judge: func(string) Verdict { return Refused(errFrozen) }}
	reqs := []*AppendRequest{
		{Path: "/ok1", ContentType: "text/plain", Messages: msgs("1a", "1b")},
		{Path: "/json", ContentType: "text/plain", Messages: msgs("wrong type")},
		{Path: "/missing", Messages: msgs("nowhere")},
		{Path: "/ok2", Messages: msgs("2a"), Producer: &ProducerTuple{ID: "p", Seq: 0}},
		{Path: "/ok2", Messages: msgs("2gap"), Producer: &ProducerTuple{ID: "p", Seq: 5}},
		{Path: "/closed", Messages: msgs("late")},
		{Path: "/frozen", Messages: msgs("refused"), Admission: adm},
		{Path: "/ok1", Messages: msgs("1c"), Admission: adm},
		{Path: "/ok2", Messages: msgs("2b"), Producer: &ProducerTuple{ID: "p", Seq: 1}, Close: true},
	}
	// Queue them in order, waiting for each to be on the lane before sending the next.
	type outcome struct {
		res AppendResult
		err error
	}
	outcomes := make([]chan outcome, len(reqs))
	for i, r := range reqs {
		outcomes[i] = make(chan outcome, 1)
		go func() {
			res, err := s.Append(ctx, r)
			outcomes[i] <- outcome{res, err}
		}()
		testwait.Until(t, "the appends to queue on the lane", func() bool { return len(s.lanes[0].ch) == i+1 }, 10*time.Second)
	}
	require.NoError(t, blocker.Rollback(ctx))
	require.NoError(t, recv(t, blocked))

	got := make([]outcome, len(reqs))
	for i := range reqs {
		got[i] = recv(t, outcomes[i])
	}
	require.NoError(t, got[0].err)
	require.Equal(t, []Offset{off(1, 2), off(2, 4)}, got[0].res.Offsets)
	require.ErrorIs(t, got[1].err, ErrContentType)
	require.ErrorIs(t, got[2].err, ErrNotFound)
	require.NoError(t, got[3].err)
	require.Equal(t, off(1, 2), got[3].res.Tail)
	var gap *SeqGapError
	require.ErrorAs(t, got[4].err, &gap)
	require.Equal(t, SeqGapError{Expected: 1, Received: 5}, *gap)
	var ce *ClosedError
	require.ErrorAs(t, got[5].err, &ce)
	require.ErrorIs(t, got[6].err, errFrozen)
	require.NoError(t, got[7].err, "an admission only refuses the streams it flags")
	require.Equal(t, off(3, 6), got[7].res.Tail, "later requests of a batch see the earlier ones")
	require.NoError(t, got[8].err)
	require.True(t, got[8].res.Closed)
	require.Equal(t, off(2, 4), got[8].res.Tail)

	// The successes were one transaction, and they are durable: check with a fresh store.
	var xmins []string
	rows, err := s.DB().Query(ctx, `SELECT DISTINCT xmin::text FROM streams WHERE path IN ('/ok1', '/ok2')`)
	require.NoError(t, err)
	for rows.Next() {
		var x string
		require.NoError(t, rows.Scan(&x))
		xmins = append(xmins, x)
	}
	require.NoError(t, rows.Err())
	require.Len(t, xmins, 1, "the batch was not committed as one transaction")

	fresh := openStore(t, s.pool)
	for path, want := range map[string][]string{
		"/ok1":    {"1a", "1b", "1c"},
		"/ok2":    {"2a", "2b"},
		"/json":   {},
		"/frozen": {},
		"/closed": {},
	} {
		m := lookup(t, fresh, path)
		all, err := fresh.Read(ctx, m, Start, m.Tail)
		require.NoError(t, err)
		require.Equal(t, want, append([]string{}, datas(all)...), path)
	}
	require.True(t, lookup(t, fresh, "/ok2").Closed)
	require.False(t, lookup(t, fresh, "/frozen").Closed)
	_, err = fresh.Lookup(ctx, "/missing")
	require.ErrorIs(t, err, ErrNotFound)
	require.Equal(t, 1, countRows(t, s, `SELECT count(*) FROM stream_producers WHERE last_seq = 1`))
}

// lockWaiters counts backends of the test database waiting for a lock.
func lockWaiters(t *testing.T, s *Store) int {
	return countRows(t, s, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)
}

// An append whose caller gives up after it was queued is still committed, and the
// caller that stays is answered.
func TestAppendCallerCancelled(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	create(t, s, "/cc", CreateConfig{ContentType: "text/plain"})

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err := s.Append(cancelled, &AppendRequest{Path: "/cc", Messages: msgs("x")})
	// Either it never got queued (ctx error) or it was committed; never anything else.
	if err != nil {
		require.ErrorIs(t, err, context.Canceled)
	}
	n := len(readAll(t, s, "/cc"))
	require.True(t, (err == nil) == (n == 1), "err %v, %d messages", err, n)
	res := appendMsgs(t, s, "/cc", "y")
	require.Equal(t, int64(n+1), res.Tail.Seq)
}
