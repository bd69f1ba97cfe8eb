package api

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/metrics"
)

type ctxKey int

const requestIDKey ctxKey = 0

// requestID takes the caller's X-Request-Id when it looks sane, or makes one, and echoes
// it on the response so a user can quote it when reporting a problem.
func requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if id == "" || len(id) > 128 || strings.ContainsAny(id, "\r\n") {
			var b [8]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(withRequestID(r.Context(), id)))
	})
}

// accessLog logs one line per request: id, method, route pattern, status, bytes, latency
// (5xx at error level, 4xx at info, the rest at debug).
func accessLog(log *zap.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			next.ServeHTTP(ww, r)
			route := chi.RouteContext(r.Context()).RoutePattern()
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK
			}
			elapsed := time.Since(start)
			live := liveMode(r)
			method := metricMethod(r.Method)
			metrics.HTTPRequests.WithLabelValues(method, route, strconv.Itoa(status), live).Inc()
			metrics.HTTPDuration.WithLabelValues(method, route, live).Observe(elapsed.Seconds())
			fields := []zap.Field{
				zap.String("request_id", requestIDFrom(r.Context())),
				zap.String("method", r.Method),
				zap.String("route", route),
				zap.String("path", r.URL.Path),
				zap.Int("status", status),
				zap.Int("bytes", ww.BytesWritten()),
				zap.Duration("latency", elapsed),
			}
			// Failures are worth a line at the default level; successful requests only at
			// debug (a busy server answers thousands a second).
			level := zap.DebugLevel
			switch {
			case status == http.StatusServiceUnavailable || status == statusClientClosed:
				// an outage is logged once, with its count, by the outage tracker
			case status >= 500:
				level = zap.ErrorLevel
			case status >= 400:
				level = zap.InfoLevel
			}
			if ce := log.Check(level, "request"); ce != nil {
				ce.Write(fields...)
			}
		})
	}
}

// metricMethod is the method for the metrics' labels: net/http accepts any token as a
// method, so anything but the standard ones counts as OTHER (no client-made series).
func metricMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	}
	return "OTHER"
}

// liveMode is the live read mode of a request for the metrics' "live" label: long-poll,
// sse, or "" (only these, so a client cannot invent label values).
func liveMode(r *http.Request) string {
	if r.Method != http.MethodGet || !strings.Contains(r.URL.RawQuery, "live=") {
		return ""
	}
	switch v := r.URL.Query().Get("live"); v {
	case "long-poll", "sse":
		return v
	}
	return ""
}

// recoverer turns a panic in a handler into a logged 500 that reveals nothing internal.
func recoverer(log *zap.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				if v := recover(); v != nil {
					if v == http.ErrAbortHandler {
						panic(v)
					}
					log.Error("handler panicked", zap.String("request_id", requestIDFrom(r.Context())),
						zap.Any("panic", v), zap.ByteString("stack", debug.Stack()))
					writeError(w, newError(http.StatusInternalServerError, CodeInternal, "Internal server error"))
				}
			}()
			next.ServeHTTP(w, r)
		})
	}
}

// Headers every response carries (CORS for browsers, and the security headers the
// Durable Streams protocol asks for), and the answer to CORS preflights.
const (
	corsAllowMethods = "GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS"
	corsAllowHeaders = "Content-Type, Authorization, If-None-Match, Stream-Seq, Stream-TTL, Stream-Expires-At, " +
		"Stream-Closed, Stream-Forked-From, Stream-Fork-Offset, Stream-Fork-Sub-Offset, Producer-Id, Producer-Epoch, " +
		"Producer-Seq, Electric-Claim-Token, Electric-Owner-Entity, Electric-Principal, Idempotency-Key, " +
		"X-Request-Id, ngrok-skip-browser-warning"
	corsExposeHeaders = "Stream-Next-Offset, Stream-Cursor, Stream-Up-To-Date, Stream-Closed, ETag, Location, " +
		"Producer-Epoch, Producer-Seq, Producer-Expected-Seq, Producer-Received-Seq, Stream-SSE-Data-Encoding, " +
		"X-Request-Id, X-Write-Token, electric-handle, electric-offset, electric-schema, electric-cursor, electric-up-to-date"
)
