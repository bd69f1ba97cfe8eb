package mcpserve

import (
	"context"
	"log/slog"

	"go.uber.org/zap"
)

// zapHandler is a slog.Handler writing to zap, for the SDK's log lines: warnings and
// errors only (its info lines are per request).
type zapHandler struct {
	log   *zap.Logger
	attrs []zap.Field
}

func (h zapHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h zapHandler) Handle(_ context.Context, r slog.Record) error {
	fields := append([]zap.Field{}, h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		fields = append(fields, zap.String(a.Key, a.Value.String()))
		return true
	})
	if r.Level >= slog.LevelError {
		h.log.Error(r.Message, fields...)
	} else {
		h.log.Warn(r.Message, fields...)
	}
	return nil
}

func (h zapHandler) WithAttrs(as []slog.Attr) slog.Handler {
	attrs := append([]zap.Field{}, h.attrs...)
	for _, a := range as {
		attrs = append(attrs, zap.String(a.Key, a.Value.String()))
	}
	return zapHandler{log: h.log, attrs: attrs}
}

func (h zapHandler) WithGroup(string) slog.Handler { return h }
