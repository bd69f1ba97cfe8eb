package server

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/entityd/entityd/api"
)

// httpService serves the API on a listener between Start and Stop. Stop ends live reads
// first (they would otherwise hold shutdown up for their whole lifetime), then lets the
// requests in flight finish.
type httpService struct {
	server   *http.Server
	listener net.Listener
	api      *api.Server
	log      *zap.Logger
	served   chan error
	fresh    freshConns
}

// freshGrace is how long a connection that has sent nothing yet may still start its first
// request once shutdown has begun, before Stop closes it.
const freshGrace = 250 * time.Millisecond

func (h *httpService) Start(context.Context) error {
	h.served = make(chan error, 1)
	h.server.ConnState = func(c net.Conn, state http.ConnState) {
		h.fresh.track(c, state)
		connState(c, state)
	}
	if h.server.TLSConfig != nil {
		// the certificate is in TLSConfig; ServeTLS offers HTTP/2 as well
		go func() { h.served <- h.server.ServeTLS(h.listener, "", "") }()
		return nil
	}
	go func() { h.served <- h.server.Serve(h.listener) }()
	return nil
}

func (h *httpService) Stop(ctx context.Context) {
	h.api.Shutdown()
	// net/http counts a connection that has not sent its first request as busy until it
	// is 5 s old (golang/go#22682), so one that a client opened ahead of use (an HTTP
	// client's spare dial, a preconnect) held the exit up to 5.5 s. Shutdown closes the
	// listener first; such a connection then has freshGrace to begin a request and is
	// closed if it has not.
	shutDown := make(chan struct{})
	go func() {
		select {
		case <-time.After(freshGrace):
			h.fresh.closeAll()
		case <-shutDown:
		}
	}()
	err := h.server.Shutdown(ctx)
	close(shutDown)
	if err != nil {
		h.log.Warn("requests still in flight at shutdown", zap.Error(err))
		return // a request still runs and may yet start a goroutine: do not wait for them
	}
	h.api.Wait()
}

// freshConns are the server's connections that have not sent a request yet
// (http.StateNew).
type freshConns struct {
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// track is the server's ConnState hook.
func (f *freshConns) track(c net.Conn, state http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if state != http.StateNew {
		delete(f.conns, c)
		return
	}
	if f.conns == nil {
		f.conns = map[net.Conn]struct{}{}
	}
	f.conns[c] = struct{}{}
}

// closeAll closes every connection that has not sent a request yet.
func (f *freshConns) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		_ = c.Close()
		delete(f.conns, c)
	}
}
