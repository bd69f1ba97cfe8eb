package streamdb

import (
	"context"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/lifecycle"
	"github.com/entityd/entityd/streamdb/internal/dbsqlc"
)

// Peers: a transaction's NOTIFY exists only to wake readers and wake dispatchers in other
// server processes, and it costs every commit a database-wide lock. So each process
// records itself in stream_listeners once its LISTEN is in place, renews that row every
// peerPoll, and checks whether any other live process is listening; while none is, its
// commits send no NOTIFY.
//
// A newcomer is covered while the others have not yet seen it: a process trusts "alone"
// only for peerTrust after its last successful check (after that it notifies again), and
// a newcomer re-checks all its readers against the database every 100 ms for
// peerCatchUp > peerTrust after registering.
//
// The windows are kept on the store's clock; the 100 ms re-checks only pace the work.
const (
	peerPoll    = time.Second
	peerTrust   = 1500 * time.Millisecond
	peerCatchUp = 2500 * time.Millisecond
	peerExpiry  = 5 * time.Second
)

type peers struct {
	// aloneUntil is the time (unix ns) until which this process may skip NOTIFY.
	aloneUntil atomic.Int64
}

// notifyNeeded reports whether commits must announce themselves now.
func (s *Store) notifyNeeded() bool {
	return s.clock.Now().UnixNano() >= s.peers.aloneUntil.Load()
}

// registerListener records this process as listening and, for a while, re-checks every
// parked reader so that commits of processes that did not know about it yet are seen.
func (s *Store) registerListener(ctx context.Context) error {
	if err := queries.RegisterListener(ctx, s.pool, dbsqlc.RegisterListenerParams{ProcID: s.procID, Now: s.clock.SQL()}); err != nil {
		return err
	}
	deadline := s.clock.Now().Add(peerCatchUp)
	catchUp, done := context.WithCancel(ctx)
	recheck := &lifecycle.Every{Interval: 100 * time.Millisecond, Run: func(context.Context) {
		if !s.clock.Now().Before(deadline) {
			done()
			return
		}
		s.notifier.publishAll()
		s.tellObservers(nil)
	}}
	recheck.Go(catchUp, &s.wg) // the listen loop's own count keeps the group open
	return nil
}

// checkPeers renews this process's listener row and finds out whether others listen;
// it runs every peerPoll.
func (s *Store) checkPeers(ctx context.Context) {
	checked := s.clock.Now()
	others, err := queries.Peers(ctx, s.pool, dbsqlc.PeersParams{ProcID: s.procID, Now: s.clock.SQL(), Expiry: peerExpiry})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Debug("peer check failed; notifying every commit", zap.Error(err))
		}
		return
	}
	if others == 0 {
		s.peers.aloneUntil.Store(checked.Add(peerTrust).UnixNano())
	} else {
		s.peers.aloneUntil.Store(0)
	}
}

// unregisterListener removes this process's row at shutdown.
func (s *Store) unregisterListener(ctx context.Context) {
	_ = queries.UnregisterListener(ctx, s.pool, s.procID)
}
