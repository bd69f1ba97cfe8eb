package streamdb

import (
	"context"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
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
	return time.Now().UnixNano() >= s.peers.aloneUntil.Load()
}

// registerListener records this process as listening and, for a while, re-checks every
// parked reader so that commits of processes that did not know about it yet are seen.
func (s *Store) registerListener(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, sqlRegisterListener, s.procID); err != nil {
		return err
	}
	go func() {
		deadline := time.Now().Add(peerCatchUp)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for time.Now().Before(deadline) {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.notifier.publishAll()
				s.tellObservers(nil)
			}
		}
	}()
	return nil
}

// peerLoop renews this process's listener row and finds out whether others listen.
func (s *Store) peerLoop(ctx context.Context) {
	t := time.NewTicker(peerPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		checked := time.Now()
		var others int
		err := s.pool.QueryRow(ctx, sqlPeers, s.procID, peerExpiry.String()).Scan(&others)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Debug("peer check failed; notifying every commit", zap.Error(err))
			}
			continue
		}
		if others == 0 {
			s.peers.aloneUntil.Store(checked.Add(peerTrust).UnixNano())
		} else {
			s.peers.aloneUntil.Store(0)
		}
	}
}

// unregisterListener removes this process's row at shutdown.
func (s *Store) unregisterListener(ctx context.Context) {
	_, _ = s.pool.Exec(ctx, sqlUnregisterListener, s.procID)
}
