package streamdb

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/clock"
	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/internal/testwait"
)

// Deleting an expired stream removes it for good (the clean-up is not rolled back with
// the "not found" answer).
func TestDeleteOfExpiredStreamRemovesIt(t *testing.T) {
	ctx := testCtx(t)
	s := newStore(t)
	past := time.Now().Add(-time.Minute)
	_, created, err := s.Create(ctx, "/v1/stream/old", CreateConfig{ContentType: "text/plain", ExpiresAt: &past}, nil)
	require.NoError(t, err)
	require.True(t, created)
	require.ErrorIs(t, s.Delete(ctx, "/v1/stream/old", nil), ErrNotFound)
	var n int
	require.NoError(t, s.DB().QueryRow(ctx, `SELECT count(*) FROM streams WHERE path = '/v1/stream/old'`).Scan(&n))
	require.Zero(t, n)
}

// A stream created already expired, with a body, is created (and then not found), not
// refused with "not found" while being created.
func TestCreateWithPastExpiryAndBody(t *testing.T) {
	ctx := testCtx(t)
	s := newStore(t)
	past := time.Now().Add(-time.Minute)
	_, created, err := s.Create(ctx, "/v1/stream/born-expired", CreateConfig{ContentType: "text/plain", ExpiresAt: &past}, msgs("x"))
	require.NoError(t, err)
	require.True(t, created)
	_, err = s.Lookup(ctx, "/v1/stream/born-expired")
	require.ErrorIs(t, err, ErrNotFound)
}

// The notifier never moves a known tail backwards when commits are announced out of order.
func TestNotifierKeepsTheNewestTail(t *testing.T) {
	n := newNotifier()
	n.acquire(1)
	defer n.release(1)
	n.publish(1, tailState{tail: Offset{Seq: 5, Pos: 50}, known: true})
	n.publish(1, tailState{tail: Offset{Seq: 3, Pos: 30}, known: true})
	_, st := n.current(1)
	require.Equal(t, int64(5), st.tail.Seq)
	n.publish(1, tailState{gone: true, known: true})
	_, st = n.current(1)
	require.True(t, st.gone)
}

// Append after Close fails cleanly instead of racing the closing of the lanes.
func TestAppendAfterClose(t *testing.T) {
	ctx := testCtx(t)
	s := newStore(t)
	_, _, err := s.Create(ctx, "/v1/stream/c", CreateConfig{ContentType: "text/plain"}, nil)
	require.NoError(t, err)
	s.Close()
	_, err = s.Append(ctx, &AppendRequest{Path: "/v1/stream/c", ContentType: "text/plain", Messages: msgs("x")})
	require.True(t, errors.Is(err, ErrClosed))
}

// A process that has been alone skips NOTIFY; a newcomer still sees its commits — at
// first through its catch-up re-checks, then through NOTIFY once the first process has
// noticed it. Both keep time with one test clock, which the test moves.
func TestNewcomerSeesCommitsOfALoneProcess(t *testing.T) {
	dsn := pgtest.URL(t)
	clk := clock.NewTest(time.Now())
	a := openStore(t, openPool(t, dsn), Options{Clock: clk})
	ctx := testCtx(t)
	create(t, a, "/alone", CreateConfig{ContentType: "text/plain"}, "first")
	clk.Advance(peerPoll)
	testwait.Until(t, "a process with no peers stops notifying", func() bool { return !a.notifyNeeded() })

	b := openStore(t, openPool(t, dsn), Options{Clock: clk})
	testwait.Until(t, "the newcomer listens", func() bool {
		return countRows(t, b, `SELECT count(*) FROM stream_listeners`) == 2
	})
	mb := lookup(t, b, "/alone")
	tail := mb.Tail
	// at 0, 0.7, 1.4 and 2.1 s into the newcomer's catch-up window (peerCatchUp), and after it
	for i := 0; i < 5; i++ {
		out := waitAsync(ctx, b, mb, tail)
		parked(t, b, 1)
		res := appendMsgs(t, a, "/alone", "next")
		o := testwait.Recv(t, out, fmt.Sprintf("append %d through the first process wakes the newcomer's reader", i), 2*time.Second)
		require.NoError(t, o.err)
		require.Equal(t, res.Tail, o.res.Tail)
		tail = o.res.Tail
		clk.Advance(700 * time.Millisecond)
	}
	// (not merely because its trust in being alone ran out: it saw the newcomer)
	testwait.Until(t, "the first process notices the newcomer", func() bool { return a.peers.aloneUntil.Load() == 0 })
	require.True(t, a.notifyNeeded(), "and notifies again")
}
