package api

import "context"

// Shutdown ends every long-poll and SSE response in progress (they answer as if their
// timeout had passed) so that a graceful shutdown does not wait out their lifetimes.
func (s *Server) Shutdown() {
	s.stopLive()
	s.ds.Shutdown()
}

// Wait returns once the goroutines requests started (SSE hubs, the outage probe) have
// ended. Call it after Shutdown and after the HTTP server stopped taking requests (they
// are the only ones that start such goroutines).
func (s *Server) Wait() {
	s.ds.Wait()
	s.bg.Wait()
}

// liveContext is ctx, also cancelled by Shutdown.
func (s *Server) liveContext(ctx context.Context, cancel context.CancelFunc) (stop func() bool) {
	return context.AfterFunc(s.live, cancel)
}

// Live is done once Shutdown was called: routes mounted from other packages that hold a
// response open (a shape's live long-poll) end on it, as the stream reads do.
func (s *Server) Live() <-chan struct{} { return s.live.Done() }

// ParkedSubscribers reports how many idle SSE subscribers are parked in stream hubs.
func (s *Server) ParkedSubscribers() int { return s.ds.ParkedSubscribers() }
