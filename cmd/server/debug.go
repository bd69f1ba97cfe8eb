package main

import (
	"net/http"
	"net/http/pprof"

	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/metrics"
)

// serveDebug serves Go's profiler on a separate, private address (--debug-addr), for
// finding where a server's time goes; it is off unless asked for.
func serveDebug(addr string, log *zap.Logger) {
	if addr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("/metrics", metrics.Handler())
	go func() {
		log.Info("debug server (pprof) listening", zap.String("addr", addr))
		if err := http.ListenAndServe(addr, mux); err != nil {
			log.Warn("debug server stopped", zap.Error(err))
		}
	}()
}
