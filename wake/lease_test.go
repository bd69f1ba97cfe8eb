package wake

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/clock"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/wire"
)

// blockHeartbeats holds the row lock of holder's lease, so that its heartbeats wait (as
// behind a starved pool or a stalled process); the returned func lets them through.
func blockHeartbeats(t *testing.T, f *fixture, holder string) func() {
	t.Helper()
	ctx := context.Background()
	tx, err := f.pool.Begin(ctx)
	require.NoError(t, err)
	var locked string
	require.NoError(t, tx.QueryRow(ctx, `SELECT holder_id FROM wake_holders WHERE holder_id = $1 FOR UPDATE`, holder).Scan(&locked))
	var once sync.Once
	unblock := func() { once.Do(func() { require.NoError(t, tx.Rollback(ctx)) }) }
	t.Cleanup(unblock)
	return unblock
}

func inboxKey(job *Job) string {
	if w, ok := job.Wake.(wire.InboxWake); ok {
		return w.Key
	}
	return ""
}

// TestNoRunOnAClaimLostWhileTheLeaseLapsed: a process whose heartbeats were stuck past
// its lease lost its claims — another process claimed its entity and got a message for
// it. When the heartbeat goes through at last, the lease is valid again, but the old
// claim is not: the process runs nothing of that entity until the other process lets go,
// and then claims it anew. (It used to run the message on its old claim, next to the
// other process; the fence refused the run's writes, but the run had happened.)
func TestNoRunOnAClaimLostWhileTheLeaseLapsed(t *testing.T) {
	clk := clock.NewTest(time.Now())
	var released atomic.Bool
	var early atomic.Int32 // runs of m while the other process held the entity
	r := &scriptedRunner{clock: clk}
	r.script = func(job *Job) (Effects, error) {
		k := inboxKey(job)
		if k == "m" && !released.Load() {
			early.Add(1)
		}
		return &testEffects{events: [][]byte{textEvent("ack " + k)}}, nil
	}
	const lease = 2 * time.Second
	f := startDeliveryOn(t, clk, r, Options{Lease: lease, IdleRelease: time.Hour})
	ctx := context.Background()
	url := f.spawn("e")
	testwait.Until(t, "the spawn is handled", func() bool { return len(r.keys(url, "spawn")) == 1 })
	require.Contains(t, f.d.Held(), url, "the idle worker keeps the entity")

	unblock := blockHeartbeats(t, f.fixture, f.d.Holder())
	clk.Advance(lease) // no heartbeat went through: the lease lapsed
	require.NoError(t, registerHolder(ctx, f.pool, "other", time.Hour, clk.SQL()))
	theirs, err := claim(ctx, f.pool, "other", []string{url}, clk.SQL())
	require.NoError(t, err)
	require.Len(t, theirs, 1, "another process claims the entity of the lapsed lease")
	f.send(url, "m", "queued", `1`)

	unblock()
	testwait.Until(t, "the stuck heartbeat renews the lease", func() bool {
		return f.count(`SELECT count(*) FROM wake_holders WHERE holder_id = $1 AND lease_until > $2`, f.d.Holder(), clk.Now()) == 1
	})
	testwait.Until(t, "this process lets go of the entity", func() bool { return !slices.Contains(f.d.Held(), url) })
	require.Zero(t, early.Load(), "m ran here on the claim the lapsed lease lost, while another process held the entity")

	// the other process lets go: this one claims the entity anew and runs m, once
	released.Store(true)
	require.NoError(t, release(ctx, f.pool, "other", url, theirs[0].epoch))
	f.d.Poke(url, "t")
	testwait.Until(t, "m is acknowledged", func() bool { return slices.Contains(f.texts(url), "ack m") })
	require.Equal(t, []string{"m"}, r.keys(url, "inbox"))
	require.Zero(t, early.Load())
	require.Greater(t, f.row(url).epoch, theirs[0].epoch, "claimed anew, after the other process")
}

// TestARunIsCancelledWhenItsLeaseIsNoLongerSure: a run under way when the heartbeats are
// stuck past three quarters of the lease (after which another process may claim the
// entity any moment) is cancelled, so that it does not overlap with that process's
// runs. The cancelled run is not an attempt (nothing is recorded, no error event): once
// the lease is renewed, the entity is claimed again with a new epoch and the message is
// run again as its first attempt.
func TestARunIsCancelledWhenItsLeaseIsNoLongerSure(t *testing.T) {
	clk := clock.NewTest(time.Now())
	started := make(chan struct{}, 1)
	causes := make(chan error, 1)
	var slowRuns atomic.Int32
	r := &scriptedRunner{clock: clk}
	r.runScript = func(ctx context.Context, job *Job) (Effects, error) {
		k := inboxKey(job)
		if k == "slow" && slowRuns.Add(1) == 1 {
			started <- struct{}{}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil, ctx.Err()
		}
		return &testEffects{events: [][]byte{textEvent("ack " + k)}}, nil
	}
	const lease = 2 * time.Second
	f := startDeliveryOn(t, clk, r, Options{Lease: lease, IdleRelease: time.Hour})
	url := f.spawn("e")
	testwait.Until(t, "the spawn is handled", func() bool { return len(r.keys(url, "spawn")) == 1 })
	epoch := f.row(url).epoch
	f.send(url, "slow", "queued", `1`)
	testwait.Recv(t, started, "the run of slow starts")

	unblock := blockHeartbeats(t, f.fixture, f.d.Holder())
	clk.Advance(lease * 3 / 4)
	require.ErrorIs(t, testwait.Recv(t, causes, "the run is cancelled"), errLeaseLost)
	testwait.Until(t, "this process lets go of the entity", func() bool { return !slices.Contains(f.d.Held(), url) })
	require.Zero(t, f.row(url).attempts, "the cancelled run is not an attempt")
	require.Zero(t, f.count(`SELECT count(*) FROM stream_messages m JOIN streams s ON s.id = m.stream_id
		WHERE s.path = $1 AND convert_from(m.data, 'UTF8')::json->>'type' = 'error'`, entitypath.Main(url)), "no error event")

	unblock()
	testwait.Until(t, "slow is acknowledged after the lease is renewed", func() bool { return slices.Contains(f.texts(url), "ack slow") })
	runs := r.attempts(url, "slow")
	require.Len(t, runs, 2)
	require.Equal(t, []int{1, 1}, []int{runs[0].attempt, runs[1].attempt}, "both runs are the first attempt")
	require.Greater(t, f.row(url).epoch, epoch, "claimed again with a new epoch")
}
