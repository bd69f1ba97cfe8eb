package streamdb

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/internal/testwait"
)

type waitOutcome struct {
	res WaitResult
	err error
}

// waitAsync starts s.Wait in a goroutine and returns the channel its outcome arrives on.
func waitAsync(ctx context.Context, s *Store, m *Meta, from Offset) <-chan waitOutcome {
	ch := make(chan waitOutcome, 1)
	go func() {
		res, err := s.Wait(ctx, m, from)
		ch <- waitOutcome{res, err}
	}()
	return ch
}

// parked waits until n streams of s have readers registered, so that what the test
// does next happens while they wait (it is not needed for correctness, only to make
// the test exercise the wake-up path rather than the initial check).
func parked(t *testing.T, s *Store, n int) {
	t.Helper()
	testwait.Until(t, "the readers to park", func() bool { return s.Watched() == n }, 10*time.Second)
}

func TestWaitReturnsAtOnceWhenDataExists(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	m := create(t, s, "/w", CreateConfig{}, "a", "bb")

	for _, from := range []Offset{Start, off(1, 1)} {
		res, err := s.Wait(ctx, m, from)
		require.NoError(t, err)
		require.Equal(t, WaitResult{Tail: off(2, 3)}, res)
	}
	require.Zero(t, s.Watched(), "a finished Wait leaves no watch behind")

	// A closed stream at its tail does not wait either.
	c := create(t, s, "/closed", CreateConfig{Closed: true}, "x")
	res, err := s.Wait(ctx, c, c.Tail)
	require.NoError(t, err)
	require.Equal(t, WaitResult{Tail: off(1, 1), Closed: true}, res)
}

func TestWaitWakesOnAppend(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	m := create(t, s, "/w", CreateConfig{}, "a")

	const readers = 5
	var outs []<-chan waitOutcome
	for range readers {
		outs = append(outs, waitAsync(ctx, s, m, m.Tail))
	}
	parked(t, s, 1)
	res := appendMsgs(t, s, "/w", "bb", "c")
	for _, out := range outs {
		o := recv(t, out)
		require.NoError(t, o.err)
		require.Equal(t, WaitResult{Tail: res.Tail}, o.res)
	}
	require.Equal(t, off(3, 4), res.Tail)
	require.Zero(t, s.Watched())

	// Then the readers read what woke them.
	page, err := s.Read(ctx, m, m.Tail, res.Tail)
	require.NoError(t, err)
	require.Equal(t, []string{"bb", "c"}, datas(page))
}

func TestWaitWakesOnClose(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	m := create(t, s, "/w", CreateConfig{}, "a")
	out := waitAsync(ctx, s, m, m.Tail)
	parked(t, s, 1)
	_, err := s.Append(ctx, &AppendRequest{Path: "/w", Close: true})
	require.NoError(t, err)
	o := recv(t, out)
	require.NoError(t, o.err)
	require.Equal(t, WaitResult{Tail: off(1, 1), Closed: true}, o.res)

	// Append and close together: the reader learns of both at once.
	m = create(t, s, "/w2", CreateConfig{})
	out = waitAsync(ctx, s, m, m.Tail)
	parked(t, s, 1)
	_, err = s.Append(ctx, &AppendRequest{Path: "/w2", Messages: msgs("last"), Close: true})
	require.NoError(t, err)
	o = recv(t, out)
	require.NoError(t, o.err)
	require.Equal(t, WaitResult{Tail: off(1, 4), Closed: true}, o.res)
}

func TestWaitTimeout(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	m := create(t, s, "/w", CreateConfig{}, "a")
	ctx, cancel := context.WithTimeout(testCtx(t), 50*time.Millisecond)
	defer cancel()
	res, err := s.Wait(ctx, m, m.Tail)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, WaitResult{Tail: off(1, 1)}, res, "the state at the timeout comes back with it")
	require.Zero(t, s.Watched())

	cctx, ccancel := context.WithCancel(testCtx(t))
	out := waitAsync(cctx, s, m, m.Tail)
	parked(t, s, 1)
	ccancel()
	o := recv(t, out)
	require.ErrorIs(t, o.err, context.Canceled)
}

func TestWaitDeleted(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	m := create(t, s, "/w", CreateConfig{}, "a")
	out := waitAsync(ctx, s, m, m.Tail)
	parked(t, s, 1)
	require.NoError(t, s.Delete(ctx, "/w", nil))
	require.ErrorIs(t, recv(t, out).err, ErrNotFound)

	// Waiting on a stream that is already gone fails at once, even if a new stream took
	// its path.
	create(t, s, "/w", CreateConfig{})
	_, err := s.Wait(ctx, m, m.Tail)
	require.ErrorIs(t, err, ErrNotFound)

	// Soft-deleting a fork source also ends its waits.
	src := create(t, s, "/src", CreateConfig{}, "a")
	fork(t, s, "/f", "/src", nil, 0)
	out = waitAsync(ctx, s, src, src.Tail)
	parked(t, s, 1)
	require.NoError(t, s.Delete(ctx, "/src", nil))
	require.ErrorIs(t, recv(t, out).err, ErrNotFound)
}

// A commit that lands while a reader is checking the stream's state must wake it. The
// writer appends as soon as the reader has seen the previous append, and the reader
// enters Wait after a random delay, so that commits fall at every point of the
// reader's way into Wait; a lost wake-up leaves the reader stuck, as nothing else is
// appended.
func TestWaitNoLostWakeups(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	m := create(t, s, "/race", CreateConfig{})
	const rounds = 300
	seen := make(chan Offset)
	writerErr := make(chan error, 1)
	go func() {
		defer close(writerErr)
		for i := range rounds {
			if _, err := s.Append(ctx, &AppendRequest{Path: "/race", Messages: msgs(fmt.Sprint(i))}); err != nil {
				writerErr <- err
				return
			}
			select {
			case <-seen:
			case <-ctx.Done():
				return
			}
		}
	}()
	rng := rand.New(rand.NewPCG(1, 2))
	from := Start
	for from.Seq < rounds {
		// Paces the reader: a random jitter so that it sometimes parks before the append
		// and sometimes after, which is the race under test.
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Microsecond)
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		res, err := s.Wait(wctx, m, from)
		cancel()
		require.NoError(t, err, "reader stuck at %v: a wake-up was lost", from)
		require.Greater(t, res.Tail.Seq, from.Seq)
		from = res.Tail
		seen <- from
	}
	require.NoError(t, recv(t, writerErr))
	require.Equal(t, int64(rounds), from.Seq)
}

// Two Stores on one database stand for two server processes: commits through one wake
// readers parked on the other via LISTEN/NOTIFY.
func TestWaitAcrossStores(t *testing.T) {
	t.Parallel()
	dsn := pgtest.URL(t)
	a := openStore(t, openPool(t, dsn))
	b := openStore(t, openPool(t, dsn))
	ctx := testCtx(t)

	m := create(t, a, "/x", CreateConfig{ContentType: "text/plain"}, "first")
	mb := lookup(t, b, "/x")
	require.Equal(t, m.ID, mb.ID)

	// Append through a, reader on b.
	out := waitAsync(ctx, b, mb, mb.Tail)
	parked(t, b, 1)
	res := appendMsgs(t, a, "/x", "second")
	o := recv(t, out)
	require.NoError(t, o.err)
	require.Equal(t, WaitResult{Tail: off(2, 11)}, o.res)
	require.Equal(t, res.Tail, o.res.Tail)
	page, err := b.Read(ctx, mb, mb.Tail, o.res.Tail)
	require.NoError(t, err)
	require.Equal(t, []string{"second"}, datas(page))

	// WithTx commits notify too, and so does a close.
	out = waitAsync(ctx, b, mb, o.res.Tail)
	parked(t, b, 1)
	require.NoError(t, a.WithTx(ctx, func(ctx context.Context, tx *Tx) error {
		_, err := tx.Append(ctx, &AppendRequest{Path: "/x", Messages: msgs("3")})
		return err
	}))
	o = recv(t, out)
	require.NoError(t, o.err)
	require.Equal(t, WaitResult{Tail: off(3, 12)}, o.res)

	out = waitAsync(ctx, b, mb, o.res.Tail)
	parked(t, b, 1)
	_, err = a.Append(ctx, &AppendRequest{Path: "/x", Close: true})
	require.NoError(t, err)
	o = recv(t, out)
	require.NoError(t, o.err)
	require.Equal(t, WaitResult{Tail: off(3, 12), Closed: true}, o.res)

	// And the other way round, on another stream.
	create(t, b, "/y", CreateConfig{})
	my := lookup(t, a, "/y")
	out = waitAsync(ctx, a, my, my.Tail)
	parked(t, a, 1)
	appendMsgs(t, b, "/y", "from b")
	o = recv(t, out)
	require.NoError(t, o.err)
	require.Equal(t, WaitResult{Tail: off(1, 6)}, o.res)
}

// A delete through one Store ends the waits parked on another.
func TestWaitAcrossStoresDeleted(t *testing.T) {
	t.Parallel()
	dsn := pgtest.URL(t)
	a := openStore(t, openPool(t, dsn))
	b := openStore(t, openPool(t, dsn))
	ctx := testCtx(t)

	create(t, a, "/x", CreateConfig{}, "a")
	mb := lookup(t, b, "/x")
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out := waitAsync(wctx, b, mb, mb.Tail)
	parked(t, b, 1)
	require.NoError(t, a.Delete(ctx, "/x", nil))
	o := recv(t, out)
	require.ErrorIs(t, o.err, ErrNotFound, "the reader on the other store was not told about the delete")
}

// A payload too large for one NOTIFY degrades to "*", which makes the other process
// re-read the state of every stream it watches.
func TestWaitAcrossStoresCoalesced(t *testing.T) {
	t.Parallel()
	dsn := pgtest.URL(t)
	a := openStore(t, openPool(t, dsn))
	b := openStore(t, openPool(t, dsn))
	ctx := testCtx(t)

	const n = 1000 // ~10 bytes per stream in the payload: over the NOTIFY limit
	_, err := a.DB().Exec(ctx, `INSERT INTO streams (path, content_type)
		SELECT '/many/' || g, 'text/plain' FROM generate_series(0, $1 - 1) g`, n)
	require.NoError(t, err)
	mb := lookup(t, b, "/many/7")
	out := waitAsync(ctx, b, mb, mb.Tail)
	parked(t, b, 1)

	w := &writeSet{}
	err = a.WithTx(ctx, func(ctx context.Context, tx *Tx) error {
		for i := range n {
			if _, err := tx.Append(ctx, &AppendRequest{Path: fmt.Sprintf("/many/%d", i), Messages: msgs("xyz")}); err != nil {
				return err
			}
		}
		*w = tx.w
		return nil
	})
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(a.notifyPayload(w), "|*"), "the test needs a coalesced payload")
	o := recv(t, out)
	require.NoError(t, o.err)
	require.Equal(t, WaitResult{Tail: off(1, 3)}, o.res)
}

func TestNotificationPayload(t *testing.T) {
	t.Parallel()
	s := &Store{procID: "me", notifier: newNotifier()}
	w := &writeSet{}
	w.touch(&Meta{ID: 7, Tail: off(3, 42)})
	w.touch(&Meta{ID: 9, Tail: off(1, 1), Closed: true})
	require.Equal(t, "me|7:3:42:,9:1:1:c", s.notifyPayload(w))
	require.Equal(t, "me|7:3:42:,9:1:1:c,5:0:0:g", s.notifyPayload(w, 5))
	require.Equal(t, "me|5:0:0:g,6:0:0:g", s.notifyPayload(&writeSet{}, 5, 6))

	// Another process's payload updates watched streams only, with the tail it carries.
	for _, id := range []int64{7, 9, 11} {
		s.notifier.acquire(id)
	}
	ch7, _ := s.notifier.current(7)
	ch11, _ := s.notifier.current(11)
	s.handleNotification("other|7:3:42:,9:1:1:c,bogus,12:x:1:,13:1:1:")
	recv(t, ch7)
	_, st := s.notifier.current(7)
	require.Equal(t, tailState{tail: off(3, 42), known: true}, st)
	_, st = s.notifier.current(9)
	require.Equal(t, tailState{tail: off(1, 1), closed: true, known: true}, st)
	select {
	case <-ch11:
		t.Fatal("an unrelated stream was woken")
	default:
	}
	require.Equal(t, 3, s.Watched())

	// Our own notifications are ignored; "*" wakes everyone with an unknown state.
	ch7, _ = s.notifier.current(7)
	s.handleNotification("me|7:9:99:")
	select {
	case <-ch7:
		t.Fatal("woken by its own notification")
	default:
	}
	s.handleNotification("other|*")
	recv(t, ch7)
	recv(t, ch11)
	_, st = s.notifier.current(7)
	require.False(t, st.known)

	// A deletion is carried as "g".
	ch9, _ := s.notifier.current(9)
	s.handleNotification("other|9:0:0:g")
	recv(t, ch9)
	_, st = s.notifier.current(9)
	require.Equal(t, tailState{gone: true, known: true}, st)
}
