package acp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/url"
	"strings"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// DefaultServer is the entityd the adapter talks to without --server (make run's address).
const DefaultServer = "http://127.0.0.1:4437"

// Options configure an adapter.
type Options struct {
	// Server is the entityd base URL (DefaultServer when empty).
	Server string
	// EntityType and EntityID name the entity session/new attaches sessions to;
	// session/list lists the entities of EntityType (session/load takes any entity).
	EntityType, EntityID string
	// Token is sent as Authorization: Bearer (jwt mode); Principal as Electric-Principal
	// (dev mode). Either may be empty.
	Token, Principal string
	// Spawn spawns the entity (with no args) on session/new if it does not exist.
	Spawn bool
	// Version is the adapter's version in agentInfo.
	Version string
	// MCP bounds the stdio MCP servers sessions name (zero fields: the defaults).
	MCP MCPLimits
	// ConfirmTools asks the editor (session/request_permission) before each call of an
	// MCP tool; "always" answers hold per tool for the session.
	ConfirmTools bool
	// Logger gets the adapter's logs; it must not write to the protocol's stream.
	Logger *zap.Logger
}

// ParseEntity splits "<type>/<id>" (a leading slash is allowed, as in entity URLs).
func ParseEntity(s string) (typ, id string, err error) {
	typ, id, ok := strings.Cut(strings.TrimPrefix(s, "/"), "/")
	if !ok || typ == "" || id == "" || strings.Contains(id, "/") {
		return "", "", errors.New("entity must be <type>/<id>, e.g. assistant/demo")
	}
	return typ, id, nil
}

// Serve runs the adapter over in (the client's messages) and out (ours) until the client
// closes in or ctx ends. Sessions and prompts in flight are ended before it returns; a
// goroutine reading in may stay blocked until in is closed (a process exits anyway).
func Serve(ctx context.Context, o Options, in io.Reader, out io.Writer) error {
	if o.Server == "" {
		o.Server = DefaultServer
	}
	if u, err := url.Parse(o.Server); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("server must be an http or https URL, e.g. " + DefaultServer)
	}
	if o.EntityType == "" || o.EntityID == "" {
		return errors.New("no entity: give <type>/<id>")
	}
	log := o.Logger
	if log == nil {
		log = zap.NewNop()
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	life, stop := context.WithCancel(ctx)
	defer stop()

	api := newEntityAPI(o)
	wout := newWireOut(out)
	a := &agent{api: api, feed: newCommandFeed(api, log), out: wout, log: log, spawn: o.Spawn,
		ver: o.Version, life: life, sessions: map[sdk.SessionId]*session{}, editor: editorShared{limits: o.MCP, confirm: o.ConfirmTools}}
	sdkIn, toSDK := io.Pipe()
	conn := sdk.NewAgentSideConnection(a, wout, sdkIn)
	conn.SetLogger(slog.New(zapHandler{log}))
	a.conn = conn
	go guardInput(in, toSDK, wout, log)

	select {
	case <-conn.Done():
	case <-ctx.Done():
		_ = sdkIn.CloseWithError(ctx.Err()) // ends the SDK's reader, hence the connection
	}
	stop()
	a.shutdown()
	a.feed.wait()
	return nil
}

// zapHandler passes the SDK's slog records to the adapter's logger, so nothing of the
// SDK reaches stdout and everything lands in one log.
type zapHandler struct{ log *zap.Logger }

func (h zapHandler) Enabled(_ context.Context, l slog.Level) bool {
	return h.log.Core().Enabled(zapLevel(l))
}

func (h zapHandler) Handle(_ context.Context, r slog.Record) error {
	fields := make([]zap.Field, 0, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		fields = append(fields, zap.Any(a.Key, a.Value.Any()))
		return true
	})
	if ce := h.log.Check(zapLevel(r.Level), "acp-go-sdk: "+r.Message); ce != nil {
		ce.Write(fields...)
	}
	return nil
}

func (h zapHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	fields := make([]zap.Field, 0, len(attrs))
	for _, a := range attrs {
		fields = append(fields, zap.Any(a.Key, a.Value.Any()))
	}
	return zapHandler{h.log.With(fields...)}
}

func (h zapHandler) WithGroup(name string) slog.Handler { return zapHandler{h.log.Named(name)} }

func zapLevel(l slog.Level) zapcore.Level {
	switch {
	case l >= slog.LevelError:
		return zapcore.ErrorLevel
	case l >= slog.LevelWarn:
		return zapcore.WarnLevel
	case l >= slog.LevelInfo:
		return zapcore.InfoLevel
	}
	return zapcore.DebugLevel
}
