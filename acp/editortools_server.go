package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/entityd/entityd/wire/editortool"
)

// terminateWait is how long stopping a server waits after closing its stdin (MCP's
// stdio shutdown) before SIGTERM, and again before SIGKILL.
const terminateWait = 2 * time.Second

// relistTimeout bounds a tools/list after a list_changed notification.
const relistTimeout = 30 * time.Second

// toolServer is one MCP server of a session: a process on this machine, spoken to over
// its stdin and stdout by the official Go SDK's client.
type toolServer struct {
	et     *editorTools
	name   string
	cfg    *sdk.McpServerStdio // nil when refused
	relist chan struct{}       // (cap 1) the server said its tools changed

	mu     sync.Mutex
	status string
	err    string
	tools  []editortool.Tool
	cs     *mcp.ClientSession
	pid    int  // its process (and process group), once started
	ended  bool // stop ran: an exit is not news
	exited chan struct{}
}

// snapshot is the server's status, why (for failed, exited and refused servers), and
// its tools (running servers only).
func (sv *toolServer) snapshot() (status, msg string, tools []editortool.Tool) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.status != editortool.StatusRunning {
		return sv.status, sv.err, nil
	}
	return sv.status, "", sv.tools
}

func (sv *toolServer) fail(status, msg string) {
	sv.mu.Lock()
	sv.status, sv.err, sv.tools = status, msg, nil
	sv.mu.Unlock()
}

// start runs the process, initializes MCP and lists the tools, within StartTimeout.
func (sv *toolServer) start() {
	et := sv.et
	cfg := sv.cfg
	if cfg.Command == "" {
		sv.fail(editortool.StatusFailed, "no command")
		return
	}
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Dir = et.cwd
	cmd.Env = os.Environ()
	for _, v := range cfg.Env {
		cmd.Env = append(cmd.Env, v.Name+"="+v.Value)
	}
	cmd.Stderr = &lineLog{log: et.log.With(zap.String("mcp_server", sv.name))}
	cmd.WaitDelay = terminateWait // a descendant holding stderr open does not hold Wait
	setProcAttrs(cmd)

	client := mcp.NewClient(&mcp.Implementation{Name: "entityd-acp", Title: "entityd acp", Version: et.a.ver}, &mcp.ClientOptions{
		Logger: slog.New(zapHandler{et.log.With(zap.String("mcp_server", sv.name))}),
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case sv.relist <- struct{}{}:
			default:
			}
		},
	})
	if abs, err := filepath.Abs(et.cwd); err == nil {
		client.AddRoots(&mcp.Root{URI: (&url.URL{Scheme: "file", Path: abs}).String(), Name: filepath.Base(abs)})
	}
	ctx, cancel := context.WithTimeout(et.ctx, et.lim.StartTimeout)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateWait}, nil)
	if err != nil {
		if cmd.Process != nil {
			killGroup(cmd.Process.Pid) // whatever the failed handshake left running
		}
		sv.fail(editortool.StatusFailed, startError(ctx, et.lim.StartTimeout, err))
		return
	}
	exited := make(chan struct{})
	go func() { _ = cs.Wait(); close(exited) }()
	sv.mu.Lock()
	sv.cs, sv.pid, sv.exited = cs, cmd.Process.Pid, exited
	sv.mu.Unlock()
	tools, err := listTools(ctx, cs, sv.name)
	if err != nil {
		sv.fail(editortool.StatusFailed, startError(ctx, et.lim.StartTimeout, fmt.Errorf("tools/list: %w", err)))
		sv.stop()
		return
	}
	sv.mu.Lock()
	sv.status, sv.tools = editortool.StatusRunning, tools
	sv.mu.Unlock()
	et.log.Info("started an MCP server", zap.String("server", sv.name), zap.Int("pid", cmd.Process.Pid), zap.Int("tools", len(tools)))
}

// startError says why a start failed, in words for the editor and the handler.
func startError(ctx context.Context, limit time.Duration, err error) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %s: %v", limit, err)
	}
	return err.Error()
}

// listTools lists every tool of the server (all pages).
func listTools(ctx context.Context, cs *mcp.ClientSession, server string) ([]editortool.Tool, error) {
	var out []editortool.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil || t.InputSchema == nil || bytes.Equal(schema, []byte("null")) {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		tool := editortool.Tool{Server: server, Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: schema}
		if t.Annotations != nil {
			tool.Annotations, _ = json.Marshal(t.Annotations)
			if tool.Title == "" {
				tool.Title = t.Annotations.Title
			}
		}
		out = append(out, tool)
	}
	return out, nil
}

// follow re-lists the tools on every list_changed and notes the process's end, until
// the session ends.
func (sv *toolServer) follow() {
	sv.mu.Lock()
	cs, exited := sv.cs, sv.exited
	running := sv.status == editortool.StatusRunning
	sv.mu.Unlock()
	if !running {
		return
	}
	et := sv.et
	for {
		select {
		case <-et.ctx.Done():
			return
		case <-exited:
			sv.mu.Lock()
			if !sv.ended {
				sv.status, sv.err, sv.tools = editortool.StatusExited, "its process ended", nil
			}
			pid := sv.pid
			sv.pid = 0 // its group id may be reused once empty: never signal it later
			sv.mu.Unlock()
			killGroup(pid) // what the server started and left behind
			et.poke()
			return
		case <-sv.relist:
			ctx, cancel := context.WithTimeout(et.ctx, relistTimeout)
			tools, err := listTools(ctx, cs, sv.name)
			cancel()
			if err != nil {
				if et.ctx.Err() == nil {
					et.log.Warn("listing an MCP server's tools after list_changed", zap.String("server", sv.name), zap.Error(err))
				}
				continue
			}
			sv.mu.Lock()
			if sv.status == editortool.StatusRunning {
				sv.tools = tools
			}
			sv.mu.Unlock()
			et.poke()
		}
	}
}

// client is the running server's session, or why there is none.
func (sv *toolServer) client() (*mcp.ClientSession, string) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	switch sv.status {
	case editortool.StatusRunning:
		return sv.cs, ""
	case editortool.StatusStarting:
		return nil, fmt.Sprintf("MCP server %q is still starting", sv.name)
	}
	return nil, fmt.Sprintf("MCP server %q is not running (%s: %s)", sv.name, sv.status, sv.err)
}

// stop closes the server (stdin closed, then SIGTERM, then SIGKILL, as MCP's stdio
// shutdown says) and kills whatever is left of its process group, once.
func (sv *toolServer) stop() {
	sv.mu.Lock()
	sv.ended = true
	cs, pid := sv.cs, sv.pid
	sv.cs, sv.pid = nil, 0
	sv.mu.Unlock()
	if cs == nil {
		return
	}
	if err := cs.Close(); err != nil {
		sv.et.log.Debug("closing an MCP server", zap.String("server", sv.name), zap.Error(err))
	}
	killGroup(pid)
	sv.et.log.Info("stopped an MCP server", zap.String("server", sv.name), zap.Int("pid", pid))
}

// lineLog writes a server's stderr to the adapter's log, a line at a time (lines cut
// at maxLogLine bytes).
type lineLog struct {
	log *zap.Logger
	buf []byte
}

const maxLogLine = 1024

func (l *lineLog) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			room := maxLogLine - len(l.buf)
			if len(p) > room {
				l.buf = append(l.buf, p[:room]...)
				l.flush()
				p = p[room:]
				continue
			}
			l.buf = append(l.buf, p...)
			break
		}
		l.buf = append(l.buf, p[:i]...)
		l.flush()
		p = p[i+1:]
	}
	return n, nil
}

func (l *lineLog) flush() {
	line := l.buf
	if len(line) > maxLogLine {
		line = line[:maxLogLine]
	}
	if len(bytes.TrimSpace(line)) > 0 {
		l.log.Info("MCP server stderr", zap.ByteString("line", line))
	}
	l.buf = l.buf[:0]
}
