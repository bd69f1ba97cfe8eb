package inflight

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testwait"
)

var (
	alice = Key{Kind: "user", ID: "alice"}
	bob   = Key{Kind: "user", ID: "bob"}
)

func TestBudgetShareAndLimit(t *testing.T) {
	b := New(100, 40, -1) // no wait: refusals are immediate
	ctx := context.Background()

	a1, err := b.Acquire(ctx, alice, 30)
	require.NoError(t, err)
	_, err = b.Acquire(ctx, alice, 20)
	require.ErrorIs(t, err, errBusy, "alice's share is 40")
	b1, err := b.Acquire(ctx, bob, 40)
	require.NoError(t, err, "another principal has a share of its own")
	hub, err := b.Acquire(ctx, Shared, 30)
	require.NoError(t, err, "the hubs count against the limit only")
	_, err = b.Acquire(ctx, alice, 1)
	require.ErrorIs(t, err, errBusy, "the limit is full")
	require.EqualValues(t, 100, b.InFlight())

	a1.Release()
	a1.Release() // idempotent
	b1.Release()
	hub.Release()
	require.EqualValues(t, 0, b.InFlight())
	require.Empty(t, b.held, "no key is remembered once it holds nothing")
}

// A request larger than a share, or than the whole budget, is served alone rather than
// never: data already stored must stay readable whatever the limits are today.
func TestBudgetLargerThanShareOrLimitGoesAlone(t *testing.T) {
	b := New(100, 40, -1)
	ctx := context.Background()

	big, err := b.Acquire(ctx, alice, 60)
	require.NoError(t, err, "larger than the share: alice holds nothing else")
	_, err = b.Acquire(ctx, alice, 1)
	require.ErrorIs(t, err, errBusy)
	big.Release()

	small, err := b.Acquire(ctx, alice, 1)
	require.NoError(t, err)
	_, err = b.Acquire(ctx, alice, 60)
	require.ErrorIs(t, err, errBusy, "larger than the share while alice holds something")
	small.Release()

	other, err := b.Acquire(ctx, bob, 1)
	require.NoError(t, err)
	_, err = b.Acquire(ctx, alice, 150)
	require.ErrorIs(t, err, errBusy, "larger than the limit while anything is held")
	other.Release()
	huge, err := b.Acquire(ctx, alice, 150)
	require.NoError(t, err, "larger than the limit with nothing held")
	_, err = b.Acquire(ctx, bob, 1)
	require.ErrorIs(t, err, errBusy)
	huge.Release()
	require.EqualValues(t, 0, b.InFlight())
}

func TestBudgetResize(t *testing.T) {
	b := New(100, 40, -1)
	ctx := context.Background()
	h, err := b.Acquire(ctx, alice, 10)
	require.NoError(t, err)
	require.NoError(t, h.resize(ctx, 30))
	other, err := b.Acquire(ctx, alice, 1)
	require.NoError(t, err)
	require.ErrorIs(t, h.resize(ctx, 60), errBusy, "growing past the share while alice holds another")
	require.EqualValues(t, 31, b.InFlight(), "a failed resize changes nothing")
	other.Release()
	require.NoError(t, h.resize(ctx, 60), "past the share, but this is all alice holds")
	require.NoError(t, h.resize(ctx, 5))
	require.EqualValues(t, 5, b.InFlight())
	h.Release()
	require.EqualValues(t, 0, b.InFlight())
}

// A waiting reservation gets its bytes when they are released, and gives up at the
// budget's wait or when its context ends.
func TestBudgetWaits(t *testing.T) {
	b := New(100, 100, time.Minute)
	full, err := b.Acquire(context.Background(), alice, 100)
	require.NoError(t, err)

	got := make(chan error, 1)
	go func() {
		h, err := b.Acquire(context.Background(), bob, 10)
		if err == nil {
			defer h.Release()
		}
		got <- err
	}()
	testwait.Until(t, "the waiter to wait for a release", func() bool { // the waiter made the channel a release closes
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.freed != nil
	}, 10*time.Second)
	full.Release()
	require.NoError(t, <-got)

	full, err = b.Acquire(context.Background(), alice, 100)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = b.Acquire(ctx, bob, 10)
	require.ErrorIs(t, err, context.Canceled)

	short := New(100, 100, 10*time.Millisecond)
	_, err = short.Acquire(context.Background(), alice, 100)
	require.NoError(t, err)
	_, err = short.Acquire(context.Background(), bob, 1)
	require.ErrorIs(t, err, errBusy, "given up after the wait")
	full.Release()
}
