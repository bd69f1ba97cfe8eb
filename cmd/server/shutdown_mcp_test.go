package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/pgtest"
)

// An MCP client holds its session's GET stream open for as long as it is connected (the
// TypeScript SDK opens one for every client). SIGTERM ends the stream first, so the
// server exits long before its 30 s shutdown timeout instead of waiting it out — which
// also cut off handlers and webhook deliveries sharing that deadline.
func TestSIGTERMEndsMCPStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	p := startProcess(t, pgtest.URL(t), freePort(t))
	post := func(path, body string, headers ...string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, p.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		return resp
	}
	resp := post("/_electric/entity-types", `{"name":"mcpstop","description":"an entity to connect to"}`)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	req, err := http.NewRequest(http.MethodPut, p.URL+"/_electric/entities/mcpstop/a", strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)

	const mcp = "/_electric/entities/mcpstop/a/mcp"
	const version = "2025-06-18"
	resp = post(mcp, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+version+
		`","capabilities":{},"clientInfo":{"name":"shutdown-test","version":"1"}}}`)
	_, _ = io.Copy(io.Discard, resp.Body) // read to its end, as a client does: the session is ready after it
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	session := resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, session)
	resp = post(mcp, `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		"Mcp-Session-Id", session, "Mcp-Protocol-Version", version)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)

	get, err := http.NewRequest(http.MethodGet, p.URL+mcp, nil)
	require.NoError(t, err)
	get.Header.Set("Accept", "text/event-stream")
	get.Header.Set("Mcp-Session-Id", session)
	get.Header.Set("Mcp-Protocol-Version", version)
	stream, err := http.DefaultClient.Do(get)
	require.NoError(t, err)
	defer stream.Body.Close()
	require.Equal(t, http.StatusOK, stream.StatusCode)
	require.Equal(t, "text/event-stream", stream.Header.Get("Content-Type"))
	ended := make(chan error, 1)
	go func() {
		r := bufio.NewReader(stream.Body)
		for {
			if _, err := r.ReadString('\n'); err != nil {
				ended <- err
				return
			}
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	require.NoError(t, p.stop(ctx), "SIGTERM exits with status 0 well before the 30 s shutdown timeout")
	t.Logf("exited %s after SIGTERM with an MCP stream open", time.Since(start).Round(time.Millisecond))
	select {
	case <-ended: // the stream was ended (the client reconnects elsewhere)
	case <-ctx.Done():
		t.Fatal("the MCP stream is still open after the server exited")
	}
}
