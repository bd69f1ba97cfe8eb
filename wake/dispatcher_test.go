package wake

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testwait"
)

// recordingRunner runs handlers of type "t" that write nothing.
type recordingRunner struct {
	mu   sync.Mutex
	jobs []*Job
}

func (r *recordingRunner) Handles(entityType string) bool { return entityType == "t" }

func (r *recordingRunner) Run(_ context.Context, job *Job) (Effects, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.jobs = append(r.jobs, job)
	return &testEffects{}, nil
}

// TestPokedEntityIsReleasedAtStop: an entity claimed because of Poke (a send unpaused
// it) is let go when the dispatcher stops, like any other, so that Stop returns at once
// and other processes can take the entity over.
func TestPokedEntityIsReleasedAtStop(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	url := f.spawn("a")
	// nothing pending: the sweep at start leaves the entity alone
	_, err := f.pool.Exec(ctx, `UPDATE entity_wake w SET scanned_seq = s.tail_seq FROM streams s WHERE s.id = w.stream_id`)
	require.NoError(t, err)
	d := New(f.store, &recordingRunner{}, []string{"t"}, Options{IdleRelease: time.Hour, SweepInterval: time.Hour})
	require.NoError(t, d.Start(ctx))
	d.Poke(url, "t")
	testwait.Until(t, "the poked entity is claimed", func() bool { return slices.Contains(d.Held(), url) })

	stopCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	start := time.Now()
	d.Stop(stopCtx)
	require.Less(t, time.Since(start), time.Second, "Stop waited for the poked entity's idle worker")
	require.Nil(t, f.row(url).holder, "the entity is released at stop")
	require.Zero(t, f.count(`SELECT count(*) FROM wake_holders WHERE holder_id = $1`, d.Holder()))
}
