package mcpserve

import (
	"net/http"
	"sync"
)

// settleWriter runs settle once, just before the response's header goes out (or after
// the handler, if it wrote nothing). The session ledger is settled there: once the
// client sees the answer to its initialize or DELETE it may send its next request at
// once, and that request must find the place already bound or given back. (The SDK's
// Go client, for one, probes with server/discover before it initializes: a place still
// held for the probe would refuse the initialize at the cap.)
type settleWriter struct {
	http.ResponseWriter
	once   sync.Once
	settle func()
}

func (w *settleWriter) done() { w.once.Do(w.settle) }

func (w *settleWriter) WriteHeader(code int) {
	w.done()
	w.ResponseWriter.WriteHeader(code)
}

func (w *settleWriter) Write(b []byte) (int, error) {
	w.done()
	return w.ResponseWriter.Write(b)
}

// Flush keeps SSE responses streaming (the SDK flushes through http.ResponseController).
func (w *settleWriter) Flush() {
	w.done()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's other features.
func (w *settleWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
