package server

import (
	"context"
	"net"
	"net/http"

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
}

func (h *httpService) Start(context.Context) error {
	h.served = make(chan error, 1)
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
	if err := h.server.Shutdown(ctx); err != nil {
		h.log.Warn("requests still in flight at shutdown", zap.Error(err))
		return // a request still runs and may yet start a goroutine: do not wait for them
	}
	h.api.Wait()
}
