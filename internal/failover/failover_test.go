//go:build unix

package failover_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/entityd/entityd/internal/failover"
	"github.com/entityd/entityd/internal/pgcluster"
	"github.com/entityd/entityd/internal/testbin"
)

// TestFailoverLosesNothingAcknowledged: the short failover run of `make test`. A
// primary with a synchronous standby, entityd on both hosts (target_session_attrs=
// read-write), eight writers; the primary is killed and the standby promoted. entityd
// reconnects by itself, writes succeed again, and every acknowledged write is in the
// stream read back from the new primary.
func TestFailoverLosesNothingAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two PostgreSQL clusters and entityd")
	}
	if _, err := pgcluster.FindBinaries(); err != nil {
		t.Skip(err)
	}
	dir, err := pgcluster.MkdirTemp("", "entityd-failover-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	rep, err := failover.Run(context.Background(), failover.Options{Dir: dir, Entityd: testbin.Build(t, "github.com/entityd/entityd/cmd/server"),
		Writers: 8, Before: 2 * time.Second, Detect: 500 * time.Millisecond, After: 4 * time.Second,
		Log: zaptest.NewLogger(t)})
	require.NoError(t, err)
	t.Logf("acked %d, present %d, lost %d; %d failed attempts; writes succeeded again %v after the kill (%v after the promotion)",
		rep.Acked, rep.Present, rep.Lost, rep.Failed, rep.Outage, rep.AfterPromote)
	require.Greater(t, rep.Acked, 0)
	require.True(t, rep.Recovered, "no write was acknowledged after the promotion")
	require.Zero(t, rep.Lost, "acknowledged writes are missing after the failover")
	require.Equal(t, rep.Acked, rep.Present)
}
