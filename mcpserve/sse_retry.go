package mcpserve

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// reconnectAfter is the SSE retry hint on a session's notification stream: how long a
// client waits before it reconnects (with Last-Event-ID) when the stream ends — at a
// server's shutdown, or when a proxy cuts it.
const reconnectAfter = time.Second

// sseRetry writes the retry hint before the first byte of a successful event stream:
// the SDK's own events carry ids but no retry field.
type sseRetry struct {
	http.ResponseWriter
	started bool
}

func (w *sseRetry) WriteHeader(code int) {
	w.ResponseWriter.WriteHeader(code)
	if w.started {
		return
	}
	w.started = true
	if code == http.StatusOK && strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		_, _ = io.WriteString(w.ResponseWriter, "retry: "+strconv.FormatInt(reconnectAfter.Milliseconds(), 10)+"\n\n")
	}
}

func (w *sseRetry) Write(p []byte) (int, error) {
	if !w.started {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

func (w *sseRetry) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (deadlines, flushes).
func (w *sseRetry) Unwrap() http.ResponseWriter { return w.ResponseWriter }
