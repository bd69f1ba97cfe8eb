package api

import "context"

// Shutdown ends every long-poll and SSE response in progress (they answer as if their
// timeout had passed) so that a graceful shutdown does not wait out their lifetimes.
func (s *Server) Shutdown() { s.stopLive() }

// liveContext is ctx, also cancelled by Shutdown.
func (s *Server) liveContext(ctx context.Context, cancel context.CancelFunc) (stop func() bool) {
	return context.AfterFunc(s.live, cancel)
}
