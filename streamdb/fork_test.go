package streamdb

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func fork(t *testing.T, s *Store, path, from string, at *Offset, sub int64) *Meta {
	t.Helper()
	m, created, err := s.Create(testCtx(t), path, CreateConfig{ForkFrom: from, ForkOffset: at, ForkSubOffset: sub}, nil)
	require.NoError(t, err)
	require.True(t, created)
	return m
}

func refcount(t *testing.T, s *Store, path string) int {
	return countRows(t, s, `SELECT refcount FROM streams WHERE path = $1`, path)
}

func TestForkAtTail(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	create(t, s, "/src", CreateConfig{ContentType: "text/plain", TTLSeconds: ptr[int64](3600)}, "ab", "cde")

	f := fork(t, s, "/f", "/src", nil, 0)
	require.True(t, f.IsFork())
	require.Equal(t, "/src", f.ForkSourcePath)
	require.Equal(t, "text/plain", f.ContentType, "a fork inherits the content type")
	require.Equal(t, int64(3600), *f.TTLSeconds, "and the expiry")
	require.Equal(t, off(2, 5), f.Tail)
	require.False(t, f.Closed)
	require.Equal(t, 1, refcount(t, s, "/src"))

	require.Equal(t, []string{"ab", "cde"}, datas(readAll(t, s, "/f")))

	// Source and fork diverge: each sees its own appends only, with offsets continuing
	// from the shared prefix.
	src := appendMsgs(t, s, "/src", "SRC")
	res := appendMsgs(t, s, "/f", "F1", "F2")
	require.Equal(t, []Offset{off(3, 7), off(4, 9)}, res.Offsets)
	require.Equal(t, off(3, 8), src.Tail)
	got := readAll(t, s, "/f")
	require.Equal(t, []string{"ab", "cde", "F1", "F2"}, datas(got))
	require.Equal(t, []Offset{off(1, 2), off(2, 5), off(3, 7), off(4, 9)}, ends(got))
	require.Equal(t, []string{"ab", "cde", "SRC"}, datas(readAll(t, s, "/src")))
	require.Equal(t, []string{"F2"}, datas(readFrom(t, s, "/f", off(3, 7))))
	require.Equal(t, []string{"cde", "F1", "F2"}, datas(readFrom(t, s, "/f", off(1, 2))))
}

func ends(ms []Message) []Offset {
	out := make([]Offset, len(ms))
	for i, m := range ms {
		out[i] = m.End
	}
	return out
}

func TestForkAtOffset(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	create(t, s, "/src", CreateConfig{ContentType: "text/plain"}, "one", "two", "three")

	mid := fork(t, s, "/mid", "/src", ptr(off(1, 3)), 0)
	require.Equal(t, off(1, 3), mid.Tail)
	appendMsgs(t, s, "/mid", "TWO")
	require.Equal(t, []string{"one", "TWO"}, datas(readAll(t, s, "/mid")))
	require.Equal(t, []Offset{off(1, 3), off(2, 6)}, ends(readAll(t, s, "/mid")))

	zero := fork(t, s, "/zero", "/src", ptr(Start), 0)
	require.Equal(t, Start, zero.Tail)
	require.Empty(t, readAll(t, s, "/zero"))
	appendMsgs(t, s, "/zero", "fresh")
	require.Equal(t, []string{"fresh"}, datas(readAll(t, s, "/zero")))

	// The offset's position is not trusted: the fork point is after message 2.
	odd := fork(t, s, "/odd", "/src", ptr(off(2, 999)), 0)
	require.Equal(t, off(2, 6), odd.Tail)

	// Forking the tail explicitly equals the default.
	full := fork(t, s, "/full", "/src", ptr(off(3, 11)), 0)
	require.Equal(t, off(3, 11), full.Tail)
	require.Equal(t, []string{"one", "two", "three"}, datas(readAll(t, s, "/full")))

	_, _, err := s.Create(ctx, "/beyond", CreateConfig{ForkFrom: "/src", ForkOffset: ptr(off(4, 11))}, nil)
	require.ErrorIs(t, err, ErrForkOffset)
	_, err = s.Lookup(ctx, "/beyond")
	require.ErrorIs(t, err, ErrNotFound)

	require.Equal(t, 4, refcount(t, s, "/src"), "refused forks take no reference")
}

func TestForkErrors(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	create(t, s, "/src", CreateConfig{ContentType: "text/plain"}, "x")

	_, _, err := s.Create(ctx, "/f", CreateConfig{ForkFrom: "/nope"}, nil)
	require.ErrorIs(t, err, ErrForkSourceMissing)

	_, _, err = s.Create(ctx, "/f", CreateConfig{ForkFrom: "/src", ContentType: "application/json"}, nil)
	require.ErrorIs(t, err, ErrContentType)

	// Content type given and equal (up to parameters) is fine.
	m, created, err := s.Create(ctx, "/f", CreateConfig{ForkFrom: "/src", ContentType: "text/plain; charset=utf-8"}, nil)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, "text/plain", m.ContentType)

	// A path in use, even by a plain stream, is not forked over.
	create(t, s, "/taken", CreateConfig{ContentType: "text/plain"})
	_, _, err = s.Create(ctx, "/taken", CreateConfig{ForkFrom: "/src"}, nil)
	require.ErrorIs(t, err, ErrExists)

	for _, p := range []string{"/nope", "/taken"} {
		require.Zero(t, countRows(t, s, `SELECT count(*) FROM streams WHERE fork_source_id IS NOT NULL AND path = $1`, p))
	}
	require.Equal(t, 1, refcount(t, s, "/src"))
}

func TestForkSubOffsetBinary(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	create(t, s, "/src", CreateConfig{}, "hello", "world")

	f := fork(t, s, "/hel", "/src", ptr(Start), 3)
	require.Equal(t, off(1, 3), f.Tail)
	got := readAll(t, s, "/hel")
	require.Equal(t, []string{"hel"}, datas(got))
	require.Equal(t, off(1, 3), got[0].End)
	res := appendMsgs(t, s, "/hel", "p!")
	require.Equal(t, off(2, 5), res.Tail)
	require.Equal(t, []string{"hel", "p!"}, datas(readAll(t, s, "/hel")))

	f = fork(t, s, "/wo", "/src", ptr(off(1, 5)), 2)
	require.Equal(t, off(2, 7), f.Tail)
	require.Equal(t, []string{"hello", "wo"}, datas(readAll(t, s, "/wo")))

	// The whole next message is a valid cut, one byte more is not.
	f = fork(t, s, "/whole", "/src", ptr(Start), 5)
	require.Equal(t, []string{"hello"}, datas(readAll(t, s, "/whole")))
	for _, tc := range []struct {
		at  Offset
		sub int64
	}{
		{Start, 6},
		{off(1, 5), 6},
		{off(2, 10), 1}, // nothing follows the tail
	} {
		_, _, err := s.Create(ctx, "/over", CreateConfig{ForkFrom: "/src", ForkOffset: &tc.at, ForkSubOffset: tc.sub}, nil)
		require.ErrorIs(t, err, ErrForkSubOffset, "%v + %d", tc.at, tc.sub)
	}
	_, err := s.Lookup(ctx, "/over")
	require.ErrorIs(t, err, ErrNotFound)

	create(t, s, "/empty", CreateConfig{})
	_, _, err = s.Create(ctx, "/over", CreateConfig{ForkFrom: "/empty", ForkOffset: ptr(Start), ForkSubOffset: 1}, nil)
	require.ErrorIs(t, err, ErrForkSubOffset)
	require.Equal(t, 3, refcount(t, s, "/src"))
	require.Zero(t, refcount(t, s, "/empty"))

	// A fork of a sub-offset fork reads the cut message, not the source's whole one.
	ff := fork(t, s, "/hel2", "/hel", ptr(off(1, 3)), 0)
	require.Equal(t, off(1, 3), ff.Tail)
	require.Equal(t, []string{"hel"}, datas(readAll(t, s, "/hel2")))
}

func TestForkSubOffsetJSON(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	parts, err := SplitJSON([]byte(`[{"n":1},{"n":2},{"n":3},{"n":4}]`))
	require.NoError(t, err)
	_, _, err = s.Create(ctx, "/src", CreateConfig{ContentType: "application/json"}, parts)
	require.NoError(t, err)

	// JSON sub-offsets count messages past the fork offset.
	f := fork(t, s, "/j", "/src", ptr(off(1, 7)), 2)
	require.Equal(t, off(3, 21), f.Tail)
	require.Equal(t, `[{"n":1},{"n":2},{"n":3}]`, string(JoinJSON(toBytes(readAll(t, s, "/j")))))
	require.Equal(t, "application/json", f.ContentType)

	f = fork(t, s, "/j-all", "/src", ptr(Start), 4)
	require.Equal(t, off(4, 28), f.Tail)

	_, _, err = s.Create(ctx, "/j-over", CreateConfig{ForkFrom: "/src", ForkOffset: ptr(off(1, 7)), ForkSubOffset: 4}, nil)
	require.ErrorIs(t, err, ErrForkSubOffset)

	// An idempotent re-create names the same offset and sub-offset.
	m, created, err := s.Create(ctx, "/j", CreateConfig{ForkFrom: "/src", ForkOffset: ptr(off(1, 7)), ForkSubOffset: 2}, nil)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, off(3, 21), m.Tail)
	_, _, err = s.Create(ctx, "/j", CreateConfig{ForkFrom: "/src", ForkOffset: ptr(off(1, 7)), ForkSubOffset: 1}, nil)
	require.ErrorIs(t, err, ErrExists)
}

func TestForkChain(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	create(t, s, "/a", CreateConfig{ContentType: "text/plain"}, "a1", "a2", "a3")
	fork(t, s, "/b", "/a", ptr(off(2, 4)), 0)
	appendMsgs(t, s, "/b", "b3", "b4")
	appendMsgs(t, s, "/a", "a4") // invisible to b and c

	c := fork(t, s, "/c", "/b", nil, 0) // at b's tail: a1 a2 b3 b4
	require.Equal(t, off(4, 8), c.Tail)
	appendMsgs(t, s, "/c", "c5")
	appendMsgs(t, s, "/b", "b5") // invisible to c
	got := readAll(t, s, "/c")
	require.Equal(t, []string{"a1", "a2", "b3", "b4", "c5"}, datas(got))
	require.Equal(t, []Offset{off(1, 2), off(2, 4), off(3, 6), off(4, 8), off(5, 10)}, ends(got))
	require.Equal(t, []string{"a2", "b3", "b4", "c5"}, datas(readFrom(t, s, "/c", off(1, 2))))
	require.Equal(t, []string{"b4", "c5"}, datas(readFrom(t, s, "/c", off(3, 6))))

	// Forks at points inside the grandparent's part of the chain.
	d := fork(t, s, "/d", "/c", ptr(off(1, 2)), 0)
	require.Equal(t, off(1, 2), d.Tail)
	require.Equal(t, []string{"a1"}, datas(readAll(t, s, "/d")))
	e := fork(t, s, "/e", "/c", ptr(off(3, 6)), 1) // binary sub-offset into b4 through c
	require.Equal(t, off(4, 7), e.Tail)
	require.Equal(t, []string{"a1", "a2", "b3", "b"}, datas(readAll(t, s, "/e")))

	require.Equal(t, []string{"a1", "a2", "a3", "a4"}, datas(readAll(t, s, "/a")))
	require.Equal(t, []string{"a1", "a2", "b3", "b4", "b5"}, datas(readAll(t, s, "/b")))
}

// Pages of a fork's read stop at the byte budget whether they come from the source,
// the fork itself or both, and concatenate to the full stream.
func TestForkReadPagination(t *testing.T) {
	t.Parallel()
	s := newStore(t, Options{MaxReadBytes: 5})
	create(t, s, "/a", CreateConfig{}, "aa", "aaa", "aaaaaaa", "a")
	fork(t, s, "/b", "/a", ptr(off(3, 12)), 0)
	appendMsgs(t, s, "/b", "b", "bbbbbbbb", "bb")
	fork(t, s, "/c", "/b", ptr(off(4, 13)), 0)
	appendMsgs(t, s, "/c", "cc", "c")
	want := []string{"aa", "aaa", "aaaaaaa", "b", "cc", "c"}
	require.Equal(t, want, datas(readAll(t, s, "/c")))
	m := lookup(t, s, "/c")
	for start := range want {
		from := Start
		for i := range start {
			from.Seq++
			from.Pos += int64(len(want[i]))
		}
		var got []string
		for from.Seq < m.Tail.Seq {
			page, err := s.Read(testCtx(t), m, from, m.Tail)
			require.NoError(t, err)
			require.NotEmpty(t, page)
			size := 0
			for _, msg := range page {
				size += len(msg.Data)
				got = append(got, string(msg.Data))
				from = msg.End
			}
			require.True(t, len(page) == 1 || size <= 5, "page %q over budget", datas(page))
		}
		require.Equal(t, want[start:], got)
	}
}

func TestForkOfClosedStreamIsOpen(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	create(t, s, "/src", CreateConfig{ContentType: "text/plain", Closed: true}, "end")
	f := fork(t, s, "/f", "/src", nil, 0)
	require.False(t, f.Closed)
	res := appendMsgs(t, s, "/f", "more")
	require.Equal(t, off(2, 7), res.Tail)
	require.Equal(t, []string{"end", "more"}, datas(readAll(t, s, "/f")))
	require.True(t, lookup(t, s, "/src").Closed)
}

func TestForkDoesNotInheritProducers(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	create(t, s, "/src", CreateConfig{ContentType: "text/plain"})
	_, err := s.Append(ctx, &AppendRequest{Path: "/src", Messages: msgs("s0"), StreamSeq: "9", Producer: &ProducerTuple{ID: "p", Seq: 0}})
	require.NoError(t, err)
	_, err = s.Append(ctx, &AppendRequest{Path: "/src", Messages: msgs("s1"), Producer: &ProducerTuple{ID: "p", Seq: 1}})
	require.NoError(t, err)
	_, err = s.Append(ctx, &AppendRequest{Path: "/src", Messages: msgs("k"), Dedupe: &Dedupe{Key: "k", Hash: []byte{1}, Ref: "src"}})
	require.NoError(t, err)

	fork(t, s, "/f", "/src", nil, 0)
	// Seq 0 is new data on the fork, Stream-Seq starts over, and so do dedupe keys.
	res, err := s.Append(ctx, &AppendRequest{Path: "/f", Messages: msgs("f0"), StreamSeq: "1", Producer: &ProducerTuple{ID: "p", Seq: 0}})
	require.NoError(t, err)
	require.False(t, res.Duplicate)
	res, err = s.Append(ctx, &AppendRequest{Path: "/f", Messages: msgs("fk"), Dedupe: &Dedupe{Key: "k", Hash: []byte{2}, Ref: "fork"}})
	require.NoError(t, err)
	require.False(t, res.Duplicate)
	require.Equal(t, []string{"s0", "s1", "k", "f0", "fk"}, datas(readAll(t, s, "/f")))
	require.Equal(t, []string{"s0", "s1", "k"}, datas(readAll(t, s, "/src")))
}

func TestForkIdempotentRecreate(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	create(t, s, "/src", CreateConfig{ContentType: "text/plain", TTLSeconds: ptr[int64](600)}, "a", "b")
	create(t, s, "/other", CreateConfig{ContentType: "text/plain"}, "a", "b")
	f := fork(t, s, "/f", "/src", ptr(off(1, 1)), 0)

	for _, cfg := range []CreateConfig{
		{ForkFrom: "/src", ForkOffset: ptr(off(1, 1))},
		{ForkFrom: "/src", ForkOffset: ptr(off(1, 1)), ContentType: "text/plain"},
	} {
		m, created, err := s.Create(ctx, "/f", cfg, nil)
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, f.ID, m.ID)
	}
	for _, cfg := range []CreateConfig{
		{ForkFrom: "/src"},
		{ForkFrom: "/src", ForkOffset: ptr(off(2, 2))},
		{ForkFrom: "/other", ForkOffset: ptr(off(1, 1))},
		{ForkFrom: "/src", ForkOffset: ptr(off(1, 1)), ForkSubOffset: 1},
		{ForkFrom: "/src", ForkOffset: ptr(off(1, 1)), ContentType: "application/json"},
		{ForkFrom: "/src", ForkOffset: ptr(off(1, 1)), TTLSeconds: ptr[int64](5)},
		{ForkFrom: "/src", ForkOffset: ptr(off(1, 1)), Closed: true},
		{ContentType: "text/plain"},
	} {
		_, _, err := s.Create(ctx, "/f", cfg, nil)
		require.ErrorIs(t, err, ErrExists, "%+v", cfg)
	}
	require.Equal(t, 1, refcount(t, s, "/src"), "re-creates take no extra reference")
	require.Zero(t, refcount(t, s, "/other"))
}

func TestForkDeleteCascade(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	src := create(t, s, "/src", CreateConfig{ContentType: "text/plain"}, "s1", "s2")
	f := fork(t, s, "/f", "/src", nil, 0)
	appendMsgs(t, s, "/f", "f3")
	require.Equal(t, 1, refcount(t, s, "/src"))

	// Deleting the source while a fork reads through it only hides it.
	require.NoError(t, s.Delete(ctx, "/src", nil))
	_, err := s.Lookup(ctx, "/src")
	require.ErrorIs(t, err, ErrGone)
	require.ErrorIs(t, s.Delete(ctx, "/src", nil), ErrGone)
	_, err = s.Append(ctx, &AppendRequest{Path: "/src", Messages: msgs("x")})
	require.ErrorIs(t, err, ErrGone)
	_, _, err = s.Create(ctx, "/src", CreateConfig{ContentType: "text/plain"}, nil)
	require.ErrorIs(t, err, ErrExists)
	_, _, err = s.Create(ctx, "/f2", CreateConfig{ForkFrom: "/src"}, nil)
	require.ErrorIs(t, err, ErrForkSourceGone)
	require.Equal(t, 1, countRows(t, s, `SELECT count(*) FROM streams WHERE path = '/src' AND soft_deleted`))
	require.Equal(t, 2, countRows(t, s, `SELECT count(*) FROM stream_messages WHERE stream_id = $1`, src.ID))

	// The fork still reads everything, and its idempotent re-create still matches.
	require.Equal(t, []string{"s1", "s2", "f3"}, datas(readAll(t, s, "/f")))
	m, created, err := s.Create(ctx, "/f", CreateConfig{ForkFrom: "/src"}, nil)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, f.ID, m.ID)

	// Deleting the last fork removes the source with it.
	require.NoError(t, s.Delete(ctx, "/f", nil))
	for _, id := range []int64{src.ID, f.ID} {
		require.Zero(t, countRows(t, s, `SELECT count(*) FROM streams WHERE id = $1`, id))
		require.Zero(t, countRows(t, s, `SELECT count(*) FROM stream_messages WHERE stream_id = $1`, id))
	}
	_, err = s.Lookup(ctx, "/src")
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorIs(t, s.Delete(ctx, "/src", nil), ErrNotFound)

	// The path is free again.
	m, created, err = s.Create(ctx, "/src", CreateConfig{ContentType: "application/json"}, nil)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, Start, m.Tail)
}

func TestForkDeleteCascadeChain(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	a := create(t, s, "/a", CreateConfig{}, "a")
	b := fork(t, s, "/b", "/a", nil, 0)
	appendMsgs(t, s, "/b", "b")
	c1 := fork(t, s, "/c1", "/b", nil, 0)
	c2 := fork(t, s, "/c2", "/b", nil, 0)
	appendMsgs(t, s, "/c2", "c")
	stored := func() int { return countRows(t, s, `SELECT count(*) FROM streams`) }

	require.NoError(t, s.Delete(ctx, "/a", nil))
	require.NoError(t, s.Delete(ctx, "/b", nil))
	require.Equal(t, 4, stored())
	require.Equal(t, 2, refcount(t, s, "/b"))
	require.Equal(t, []string{"a", "b", "c"}, datas(readAll(t, s, "/c2")))

	require.NoError(t, s.Delete(ctx, "/c1", nil))
	require.Equal(t, 3, stored(), "b still has a fork")
	require.Equal(t, []string{"a", "b", "c"}, datas(readAll(t, s, "/c2")))

	require.NoError(t, s.Delete(ctx, "/c2", nil))
	require.Zero(t, stored(), "the whole chain is gone")
	require.Zero(t, countRows(t, s, `SELECT count(*) FROM stream_messages`))
	for _, id := range []int64{a.ID, b.ID, c1.ID, c2.ID} {
		require.Zero(t, countRows(t, s, `SELECT count(*) FROM streams WHERE id = $1`, id))
	}

	// A live source is not taken along when its fork goes.
	create(t, s, "/live", CreateConfig{}, "x")
	fork(t, s, "/lf", "/live", nil, 0)
	require.NoError(t, s.Delete(ctx, "/lf", nil))
	require.Equal(t, []string{"x"}, datas(readAll(t, s, "/live")))
	require.Zero(t, refcount(t, s, "/live"))
	require.NoError(t, s.Delete(ctx, "/live", nil))
	require.Zero(t, stored())
}

// A fork's readers are not woken by its source's appends, only by the fork's own.
func TestForkWaitersIgnoreSource(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	create(t, s, "/src", CreateConfig{}, "a")
	f := fork(t, s, "/f", "/src", nil, 0)

	s.notifier.acquire(f.ID)
	defer s.notifier.release(f.ID)
	// A new store wakes every reader with an unknown state for a while (its catch-up with
	// peers, see registerListener); such a wake says nothing about the source's appends,
	// so try again when it is the one that came.
	for attempt := 0; ; attempt++ {
		ch, _ := s.notifier.current(f.ID)
		appendMsgs(t, s, "/src", "b") // published before Append returns
		select {
		case <-ch:
			if _, st := s.notifier.current(f.ID); !st.known && attempt < 20 {
				continue // woken by the catch-up, not by the append
			}
			t.Fatal("a source append woke the fork's readers")
		default:
		}
		break
	}

	out := waitAsync(ctx, s, f, f.Tail)
	appendMsgs(t, s, "/f", "F")
	o := recv(t, out)
	require.NoError(t, o.err)
	require.Equal(t, WaitResult{Tail: off(2, 2)}, o.res)
}
