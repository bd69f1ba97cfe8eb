package mcpserve_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sseEvent is one event of a stream: its fields as sent.
type sseEvent struct{ id, event, data, retry string }

// openStream opens a session's GET notification stream (from lastEventID when given)
// and returns a reader of its events.
func openStream(t *testing.T, ctx context.Context, url, session, lastEventID string) (<-chan sseEvent, func()) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET: %d %s", resp.StatusCode, body)
	}
	events := make(chan sseEvent, 16)
	go func() {
		defer close(events)
		r := bufio.NewReader(resp.Body)
		var ev sseEvent
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimRight(line, "\r\n")
			if line == "" {
				if ev != (sseEvent{}) { // a blank line ends an event; alone it is nothing
					events <- ev
				}
				ev = sseEvent{}
				continue
			}
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimPrefix(v, " ")
			switch k {
			case "id":
				ev.id = v
			case "event":
				ev.event = v
			case "data":
				ev.data += v
			case "retry":
				ev.retry = v
			}
		}
	}()
	return events, func() { resp.Body.Close() }
}

func nextEvent(t *testing.T, events <-chan sseEvent) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-events:
		require.True(t, ok, "the stream ended")
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
		return sseEvent{}
	}
}

// The notification stream says how soon to reconnect and numbers its events, and a
// client that reconnects with Last-Event-ID gets what was sent while it was away: a
// list_changed during a reconnect is not lost.
func TestNotificationStreamResumes(t *testing.T) {
	e := setup(t)
	url := e.srv.URL + "/_electric/entities/chat/one/mcp"
	post := func(body, session string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body) // the answer, read to its end as a client does
		resp.Body.Close()
		return resp
	}
	resp := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",
		"capabilities":{},"clientInfo":{"name":"resume","version":"1"}}}`, "")
	session := resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, session)
	require.Equal(t, http.StatusAccepted, post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, session).StatusCode)

	ctx, cancel := context.WithCancel(context.Background())
	events, closeStream := openStream(t, ctx, url, session, "")
	hint := nextEvent(t, events)
	require.Equal(t, "1000", hint.retry, "the stream starts with a retry hint")

	e.http("PUT", "/_electric/entities/chat/one/slash-commands/deploy?owner=ops", `{"name":"deploy","description":"Ship it"}`, "", http.StatusOK)
	first := nextEvent(t, events)
	require.Contains(t, first.data, "notifications/prompts/list_changed")
	require.NotEmpty(t, first.id, "events carry ids")
	closeStream()
	cancel()

	// a change while the client is away
	e.http("PUT", "/_electric/entities/chat/one/slash-commands/rollback?owner=ops", `{"name":"rollback","description":"Undo"}`, "", http.StatusOK)

	events, closeStream = openStream(t, context.Background(), url, session, first.id)
	defer closeStream()
	var missed sseEvent
	for missed.data == "" { // a retry hint first, then the replay
		missed = nextEvent(t, events)
	}
	require.Contains(t, missed.data, "notifications/prompts/list_changed", "the change made while away is replayed")
	require.NotEqual(t, first.id, missed.id)
}
