// Command mcpserver is a stdio MCP server for the ACP adapter's tests (built by the
// tests, run by the adapter as an editor's session/new names it). It writes its pid to
// $MCP_TEST_DIR/<MCP_TEST_NAME>.pid and, with MCP_TEST_CHILD set, starts a child that
// sleeps (its pid in <name>.child.pid), so tests can check nothing outlives a session.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoIn struct {
	Text string `json:"text" jsonschema:"what to echo"`
}

type envIn struct {
	Name string `json:"name" jsonschema:"an environment variable"`
}

type failIn struct {
	Message string `json:"message"`
}

type bigIn struct {
	Bytes int `json:"bytes"`
}

type addIn struct {
	Name string `json:"name"`
}

type none struct{}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// record appends the tool's name to <name>.calls, one line per call run.
func record(dir, name, tool string) {
	if dir == "" {
		return
	}
	f, err := os.OpenFile(filepath.Join(dir, name+".calls"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		_, _ = f.WriteString(tool + "\n")
		_ = f.Close()
	}
}

func writePid(dir, file string, pid int) {
	if dir != "" {
		_ = os.WriteFile(filepath.Join(dir, file), []byte(strconv.Itoa(pid)), 0o644)
	}
}

func main() {
	dir, name := os.Getenv("MCP_TEST_DIR"), os.Getenv("MCP_TEST_NAME")
	if name == "" {
		name = "mcpserver"
	}
	writePid(dir, name+".pid", os.Getpid())
	if os.Getenv("MCP_TEST_CHILD") != "" {
		child := exec.Command("sleep", "1000")
		if err := child.Start(); err == nil {
			writePid(dir, name+".child.pid", child.Process.Pid)
		}
	}

	s := mcp.NewServer(&mcp.Implementation{Name: "testtools", Version: "1"}, nil)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && method == "tools/call" {
				record(dir, name, p.Name)
			}
			return next(ctx, method, req)
		}
	})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes its text", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return text("echo: " + in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Reads an environment variable and the working directory"},
		func(_ context.Context, _ *mcp.CallToolRequest, in envIn) (*mcp.CallToolResult, any, error) {
			wd, _ := os.Getwd()
			return text(fmt.Sprintf("%s=%s cwd=%s", in.Name, os.Getenv(in.Name), wd)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails"},
		func(_ context.Context, _ *mcp.CallToolRequest, in failIn) (*mcp.CallToolResult, any, error) {
			r := text("failed: " + in.Message)
			r.IsError = true
			return r, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Returns a long text"},
		func(_ context.Context, _ *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, any, error) {
			return text(strings.Repeat("x", in.Bytes)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "block", Description: "Waits until cancelled"},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			if dir != "" {
				_ = os.WriteFile(filepath.Join(dir, name+".cancelled"), []byte("cancelled"), 0o644)
			}
			return nil, nil, ctx.Err()
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add_tool", Description: "Adds a tool that echoes (the list changes)"},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, any, error) {
			mcp.AddTool(s, &mcp.Tool{Name: in.Name, Description: "added later"},
				func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
					return text("late: " + in.Text), nil, nil
				})
			return text("added " + in.Name), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exits the server"},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcpserver:", err)
		os.Exit(1)
	}
}
