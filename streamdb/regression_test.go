package streamdb

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
	require.ErrorIs(t, s.Delete(ctx, "/v1/stream/old"), ErrNotFound)
	var n int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM streams WHERE path = '/v1/stream/old'`).Scan(&n))
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
