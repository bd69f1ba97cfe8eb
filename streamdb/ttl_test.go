package streamdb

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/clock"
	"github.com/entityd/entityd/internal/testwait"
)

// idleFor moves a stream's last access into the past, as if nobody had touched it for d
// (by the store's clock).
func idleFor(t *testing.T, s *Store, path string, d time.Duration) {
	t.Helper()
	tag, err := s.DB().Exec(testCtx(t),
		`UPDATE streams SET last_access_at = coalesce($3::timestamptz, now()) - make_interval(secs => $2) WHERE path = $1`,
		path, d.Seconds(), s.Clock().SQL())
	require.NoError(t, err)
	require.Equal(t, int64(1), tag.RowsAffected())
}

func TestTTLExpiresWithoutAccess(t *testing.T) {
	t.Parallel()
	clk := clock.NewTest(time.Now())
	s := newStore(t, Options{Clock: clk})
	ctx := testCtx(t)
	old := create(t, s, "/ttl", CreateConfig{ContentType: "text/plain", TTLSeconds: ptr[int64](1)}, "data")
	m := lookup(t, s, "/ttl")
	require.Equal(t, int64(1), *m.TTLSeconds)
	require.Equal(t, clk.Now(), m.LastAccessAt, "created now by the store's clock")

	clk.Advance(999 * time.Millisecond)
	lookup(t, s, "/ttl") // a millisecond left
	clk.Advance(time.Millisecond)
	_, err := s.Lookup(ctx, "/ttl")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = s.Append(ctx, &AppendRequest{Path: "/ttl", Messages: msgs("late")})
	require.ErrorIs(t, err, ErrNotFound)
	_, err = s.Append(ctx, &AppendRequest{Path: "/ttl", Close: true})
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorIs(t, s.Delete(ctx, "/ttl", nil), ErrNotFound)

	// Creating at the path makes a fresh stream, whatever the old configuration was.
	m, created, err := s.Create(ctx, "/ttl", CreateConfig{ContentType: "application/json"}, nil)
	require.NoError(t, err)
	require.True(t, created)
	require.NotEqual(t, old.ID, m.ID)
	require.Equal(t, Start, m.Tail)
	require.Nil(t, m.TTLSeconds)
	require.Empty(t, readAll(t, s, "/ttl"))
	require.Zero(t, countRows(t, s, `SELECT count(*) FROM stream_messages WHERE stream_id = $1`, old.ID))
	require.Equal(t, 1, countRows(t, s, `SELECT count(*) FROM streams`))
}

// Reads (Touch) and writes (appends, close-only) restart the idle window; Lookup, the
// HEAD path, does not.
func TestTTLRefresh(t *testing.T) {
	t.Parallel()
	clk := clock.NewTest(time.Now())
	s := newStore(t, Options{Clock: clk})
	ctx := testCtx(t)
	paths := []string{"/touched", "/appended", "/closed", "/producer-closed", "/idle"}
	for _, p := range paths {
		create(t, s, p, CreateConfig{ContentType: "text/plain", TTLSeconds: ptr[int64](2)}, "x")
		idleFor(t, s, p, 1500*time.Millisecond) // half a second left
	}
	for _, p := range paths {
		lookup(t, s, p) // still alive, and looking does not refresh
	}
	require.NoError(t, s.Touch(ctx, lookup(t, s, "/touched")))
	appendMsgs(t, s, "/appended", "y")
	_, err := s.Append(ctx, &AppendRequest{Path: "/closed", Close: true})
	require.NoError(t, err)
	_, err = s.Append(ctx, &AppendRequest{Path: "/producer-closed", Close: true, Producer: &ProducerTuple{ID: "p"}})
	require.NoError(t, err)

	refreshed := clk.Now()
	clk.Advance(500 * time.Millisecond) // the idle stream's end, a second and a half inside the others'
	_, err = s.Lookup(ctx, "/idle")
	require.ErrorIs(t, err, ErrNotFound)
	for _, p := range paths[:4] {
		m, err := s.Lookup(ctx, p)
		require.NoError(t, err, p)
		require.Equal(t, refreshed, m.LastAccessAt, p)
	}
	require.Equal(t, []string{"x", "y"}, datas(readAll(t, s, "/appended")))

	// A close-only request on an already closed stream is a write as well.
	idleFor(t, s, "/closed", 1500*time.Millisecond)
	_, err = s.Append(ctx, &AppendRequest{Path: "/closed", Close: true})
	require.NoError(t, err)
	require.Equal(t, clk.Now(), lookup(t, s, "/closed").LastAccessAt)
}

func TestTouchWithoutTTL(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	m := create(t, s, "/plain", CreateConfig{})
	idleFor(t, s, "/plain", time.Hour)
	before := lookup(t, s, "/plain")
	require.NoError(t, s.Touch(testCtx(t), m))
	after := lookup(t, s, "/plain")
	require.Equal(t, before.LastAccessAt, after.LastAccessAt, "a stream without TTL is not written by Touch")
}

func TestExpiresAt(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)

	past := time.Now().Add(-time.Minute)
	_, created, err := s.Create(ctx, "/past", CreateConfig{ExpiresAt: &past}, nil)
	require.NoError(t, err)
	require.True(t, created)
	_, err = s.Lookup(ctx, "/past")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = s.Append(ctx, &AppendRequest{Path: "/past", Messages: msgs("y")})
	require.ErrorIs(t, err, ErrNotFound)

	// Expires-At is absolute: activity does not extend it.
	future := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	m := create(t, s, "/abs", CreateConfig{ExpiresAt: &future})
	appendMsgs(t, s, "/abs", "a")
	require.NoError(t, s.Touch(ctx, m))
	got := lookup(t, s, "/abs")
	require.True(t, future.Equal(*got.ExpiresAt), "%v != %v", future, *got.ExpiresAt)
	_, err = s.DB().Exec(ctx, `UPDATE streams SET expires_at = now() - interval '1 second' WHERE path = '/abs'`)
	require.NoError(t, err)
	_, err = s.Lookup(ctx, "/abs")
	require.ErrorIs(t, err, ErrNotFound)
	m, created, err = s.Create(ctx, "/abs", CreateConfig{ExpiresAt: &future}, nil)
	require.NoError(t, err)
	require.True(t, created, "an expired stream is replaced, even by the same configuration")
	require.Equal(t, Start, m.Tail)
}

func TestTTLForks(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	create(t, s, "/src", CreateConfig{ContentType: "text/plain", TTLSeconds: ptr[int64](60)}, "s")
	inherit := fork(t, s, "/inherit", "/src", nil, 0)
	require.Equal(t, int64(60), *inherit.TTLSeconds, "a fork without expiry inherits the source's TTL")
	own, _, err := s.Create(ctx, "/own", CreateConfig{ForkFrom: "/src", TTLSeconds: ptr[int64](3600)}, nil)
	require.NoError(t, err)
	require.Equal(t, int64(3600), *own.TTLSeconds)
	exp := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	abs, _, err := s.Create(ctx, "/abs", CreateConfig{ForkFrom: "/src", ExpiresAt: &exp}, nil)
	require.NoError(t, err)
	require.Nil(t, abs.TTLSeconds)
	require.True(t, exp.Equal(*abs.ExpiresAt))

	// The inherited TTL is the fork's own window: the source idling does not expire it.
	idleFor(t, s, "/src", 2*time.Minute)
	lookup(t, s, "/inherit")

	// An expired source with live forks is gone (not missing), its forks read on.
	_, err = s.Lookup(ctx, "/src")
	require.ErrorIs(t, err, ErrGone)
	_, err = s.Append(ctx, &AppendRequest{Path: "/src", Messages: msgs("x")})
	require.ErrorIs(t, err, ErrGone)
	_, _, err = s.Create(ctx, "/src", CreateConfig{ContentType: "text/plain"}, nil)
	require.ErrorIs(t, err, ErrExists)
	_, _, err = s.Create(ctx, "/late", CreateConfig{ForkFrom: "/src"}, nil)
	require.ErrorIs(t, err, ErrForkSourceGone)
	appendMsgs(t, s, "/own", "o")
	require.Equal(t, []string{"s", "o"}, datas(readAll(t, s, "/own")))

	// An expired fork source with no forks is missing.
	create(t, s, "/lonely", CreateConfig{TTLSeconds: ptr[int64](1)}, "x")
	idleFor(t, s, "/lonely", time.Minute)
	_, _, err = s.Create(ctx, "/f", CreateConfig{ForkFrom: "/lonely"}, nil)
	require.ErrorIs(t, err, ErrForkSourceMissing)
}

func TestSweep(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)

	soon := time.Now().Add(time.Hour)
	a := create(t, s, "/expired-at", CreateConfig{ExpiresAt: &soon}, "a1", "a2")
	_, err := s.DB().Exec(ctx, `UPDATE streams SET expires_at = now() - interval '1 second' WHERE id = $1`, a.ID)
	require.NoError(t, err)
	b := create(t, s, "/idle", CreateConfig{TTLSeconds: ptr[int64](1)}, "b")
	idleFor(t, s, "/idle", 5*time.Second)
	c := create(t, s, "/referenced", CreateConfig{TTLSeconds: ptr[int64](1)}, "c")
	f, _, err := s.Create(ctx, "/fork", CreateConfig{ForkFrom: "/referenced", TTLSeconds: ptr[int64](3600)}, nil)
	require.NoError(t, err)
	idleFor(t, s, "/referenced", 5*time.Second)
	d := create(t, s, "/live-ttl", CreateConfig{TTLSeconds: ptr[int64](3600)}, "d")
	e := create(t, s, "/forever", CreateConfig{}, "e")
	future := time.Now().Add(time.Hour)
	g := create(t, s, "/later", CreateConfig{ExpiresAt: &future}, "g")

	n, err := s.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	exists := func(id int64) bool {
		return countRows(t, s, `SELECT count(*) FROM streams WHERE id = $1`, id) == 1
	}
	stored := func(id int64) int {
		return countRows(t, s, `SELECT count(*) FROM stream_messages WHERE stream_id = $1`, id)
	}
	for _, id := range []int64{a.ID, b.ID} {
		require.False(t, exists(id))
		require.Zero(t, stored(id))
	}
	for _, m := range []*Meta{c, f, d, e, g} {
		require.True(t, exists(m.ID), m.Path)
	}
	require.Equal(t, 1, stored(c.ID), "a referenced source keeps its data for the fork")
	require.Equal(t, []string{"c"}, datas(readAll(t, s, "/fork")))

	n, err = s.Sweep(ctx)
	require.NoError(t, err)
	require.Zero(t, n)

	// When the fork goes, the expired source goes with it.
	require.NoError(t, s.Delete(ctx, "/fork", nil))
	require.False(t, exists(c.ID))
	require.Zero(t, stored(c.ID))
	require.Equal(t, 3, countRows(t, s, `SELECT count(*) FROM streams`))

	// And an expired fork swept away releases its live source.
	create(t, s, "/src2", CreateConfig{}, "x")
	_, _, err = s.Create(ctx, "/fork2", CreateConfig{ForkFrom: "/src2", TTLSeconds: ptr[int64](1)}, nil)
	require.NoError(t, err)
	require.Equal(t, 1, refcount(t, s, "/src2"))
	idleFor(t, s, "/fork2", 5*time.Second)
	n, err = s.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Zero(t, refcount(t, s, "/src2"))
	require.Equal(t, []string{"x"}, datas(readAll(t, s, "/src2")))
}

// The sweeper runs every SweepInterval of the store's clock and deletes what expired.
func TestSweepLoop(t *testing.T) {
	t.Parallel()
	clk := clock.NewTest(time.Now())
	s := newStore(t, Options{SweepInterval: time.Minute, Clock: clk})
	soon := clk.Now().Add(time.Hour)
	create(t, s, "/gone-soon", CreateConfig{ExpiresAt: &soon}, "x")
	create(t, s, "/stays", CreateConfig{}, "y")
	gone := func() bool { return countRows(t, s, `SELECT count(*) FROM streams WHERE path = '/gone-soon'`) == 0 }
	require.False(t, gone())
	clk.Advance(time.Hour) // past the Expires-At, and the sweep due a minute in comes
	testwait.Until(t, "the expired stream is swept", gone)
	require.Zero(t, countRows(t, s, `SELECT count(*) FROM stream_messages WHERE data = 'x'`))
	require.Equal(t, []string{"y"}, datas(readAll(t, s, "/stays")))
}
