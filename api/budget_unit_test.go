package api

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testwait"
)

var (
	alice = budgetKey{kind: "user", id: "alice"}
	bob   = budgetKey{kind: "user", id: "bob"}
)

func TestBudgetShareAndLimit(t *testing.T) {
	b := newBudget(100, 40, -1) // no wait: refusals are immediate
	ctx := context.Background()

	a1, err := b.reserve(ctx, alice, 30)
	require.NoError(t, err)
	_, err = b.reserve(ctx, alice, 20)
	require.ErrorIs(t, err, errBudgetBusy, "alice's share is 40")
	b1, err := b.reserve(ctx, bob, 40)
	require.NoError(t, err, "another principal has a share of its own")
	hub, err := b.reserve(ctx, hubKey, 30)
	require.NoError(t, err, "the hubs count against the limit only")
	_, err = b.reserve(ctx, alice, 1)
	require.ErrorIs(t, err, errBudgetBusy, "the limit is full")
	require.EqualValues(t, 100, b.inFlight())

	a1.release()
	a1.release() // idempotent
	b1.release()
	hub.release()
	require.EqualValues(t, 0, b.inFlight())
	require.Empty(t, b.held, "no key is remembered once it holds nothing")
}

// A request larger than a share, or than the whole budget, is served alone rather than
// never: data already stored must stay readable whatever the limits are today.
func TestBudgetLargerThanShareOrLimitGoesAlone(t *testing.T) {
	b := newBudget(100, 40, -1)
	ctx := context.Background()

	big, err := b.reserve(ctx, alice, 60)
	require.NoError(t, err, "larger than the share: alice holds nothing else")
	_, err = b.reserve(ctx, alice, 1)
	require.ErrorIs(t, err, errBudgetBusy)
	big.release()

	small, err := b.reserve(ctx, alice, 1)
	require.NoError(t, err)
	_, err = b.reserve(ctx, alice, 60)
	require.ErrorIs(t, err, errBudgetBusy, "larger than the share while alice holds something")
	small.release()

	other, err := b.reserve(ctx, bob, 1)
	require.NoError(t, err)
	_, err = b.reserve(ctx, alice, 150)
	require.ErrorIs(t, err, errBudgetBusy, "larger than the limit while anything is held")
	other.release()
	huge, err := b.reserve(ctx, alice, 150)
	require.NoError(t, err, "larger than the limit with nothing held")
	_, err = b.reserve(ctx, bob, 1)
	require.ErrorIs(t, err, errBudgetBusy)
	huge.release()
	require.EqualValues(t, 0, b.inFlight())
}

func TestBudgetResize(t *testing.T) {
	b := newBudget(100, 40, -1)
	ctx := context.Background()
	h, err := b.reserve(ctx, alice, 10)
	require.NoError(t, err)
	require.NoError(t, h.resize(ctx, 30))
	other, err := b.reserve(ctx, alice, 1)
	require.NoError(t, err)
	require.ErrorIs(t, h.resize(ctx, 60), errBudgetBusy, "growing past the share while alice holds another")
	require.EqualValues(t, 31, b.inFlight(), "a failed resize changes nothing")
	other.release()
	require.NoError(t, h.resize(ctx, 60), "past the share, but this is all alice holds")
	require.NoError(t, h.resize(ctx, 5))
	require.EqualValues(t, 5, b.inFlight())
	h.release()
	require.EqualValues(t, 0, b.inFlight())
}

// A waiting reservation gets its bytes when they are released, and gives up at the
// budget's wait or when its context ends.
func TestBudgetWaits(t *testing.T) {
	b := newBudget(100, 100, time.Minute)
	full, err := b.reserve(context.Background(), alice, 100)
	require.NoError(t, err)

	got := make(chan error, 1)
	go func() {
		h, err := b.reserve(context.Background(), bob, 10)
		if err == nil {
			defer h.release()
		}
		got <- err
	}()
	testwait.Until(t, "the waiter to wait for a release", func() bool { // the waiter made the channel a release closes
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.freed != nil
	}, 10*time.Second)
	full.release()
	require.NoError(t, <-got)

	full, err = b.reserve(context.Background(), alice, 100)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = b.reserve(ctx, bob, 10)
	require.ErrorIs(t, err, context.Canceled)

	short := newBudget(100, 100, 10*time.Millisecond)
	_, err = short.reserve(context.Background(), alice, 100)
	require.NoError(t, err)
	_, err = short.reserve(context.Background(), bob, 1)
	require.ErrorIs(t, err, errBudgetBusy, "given up after the wait")
	full.release()
}
