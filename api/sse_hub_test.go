package api_test

import (
	"bufio"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/internal/testwait"
)

// sseReader reads SSE events from a live response.
type sseReader struct {
	resp *http.Response
	r    *bufio.Reader
}

func openSSE(t *testing.T, url string) *sseReader {
	t.Helper()
	// a whole-request timeout bounds every read, so a subscriber that is never served
	// fails the test instead of hanging it
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(url)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	t.Cleanup(func() { resp.Body.Close() })
	return &sseReader{resp: resp, r: bufio.NewReader(resp.Body)}
}

// next returns the next event's type and data (keep-alive comments skipped).
func (s *sseReader) next() (string, string, error) {
	var typ string
	var data []string
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return "", "", err
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
			if typ != "" {
				return typ, strings.Join(data, "\n"), nil
			}
		case strings.HasPrefix(line, "event:"):
			typ = strings.TrimSpace(line[6:])
		case strings.HasPrefix(line, "data:"):
			data = append(data, line[5:])
		}
	}
}

// Idle subscribers at the tail are parked in the stream's hub — no goroutines of their
// own — and a change reaches every one of them; their responses end with the lifetime.
func TestSSEHubParksIdleSubscribers(t *testing.T) {
	// The lifetime must outlast opening all the subscribers on a loaded machine (with 3 s,
	// the first ones ended before the last one parked in a full parallel run).
	h := setup(t, testserver.Options{API: api.Config{SSELifetime: 10 * time.Second}})
	r := h.do(http.MethodPut, "/v1/stream/hub", `{"n":0}`)
	require.Equal(t, http.StatusCreated, r.Status)

	const n = 60
	before := runtime.NumGoroutine()
	subs := make([]*sseReader, n)
	for i := range subs {
		subs[i] = openSSE(t, h.srv.URL+"/v1/stream/hub?offset=-1&live=sse")
		typ, data, err := subs[i].next()
		require.NoError(t, err)
		require.Equal(t, "data", typ)
		require.Equal(t, `[{"n":0}]`, data)
		typ, data, err = subs[i].next()
		require.NoError(t, err)
		require.Equal(t, "control", typ)
		require.Contains(t, data, `"upToDate":true`)
	}
	testwait.Until(t, "the subscribers to park", func() bool { return h.srv.API.ParkedSubscribers() == n }, 5*time.Second)
	// The client side holds about two goroutines per connection; the server side holds
	// none per parked subscriber (only the hub's one).
	require.Less(t, runtime.NumGoroutine()-before, 3*n, "parked subscribers must not keep server goroutines")

	r = h.do(http.MethodPost, "/v1/stream/hub", `{"n":1}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusNoContent, r.Status)
	for _, sub := range subs {
		typ, data, err := sub.next()
		require.NoError(t, err)
		require.Equal(t, "data", typ)
		require.Equal(t, `[{"n":1}]`, data)
		typ, data, err = sub.next()
		require.NoError(t, err)
		require.Equal(t, "control", typ)
		require.Contains(t, data, `"streamNextOffset":"0000000000000002_`)
		require.Contains(t, data, `"upToDate":true`)
	}

	// The lifetime ends every response (clients reconnect from their last offset).
	for _, sub := range subs {
		_, _, err := sub.next()
		require.ErrorIs(t, err, io.EOF)
	}
	testwait.Until(t, "no parked subscriber", func() bool { return h.srv.API.ParkedSubscribers() == 0 }, 5*time.Second)
}

// Closing the stream sends the final control event to parked subscribers and ends
// their responses.
func TestSSEHubDeliversTheClose(t *testing.T) {
	h := setup(t)
	require.Equal(t, http.StatusCreated, h.do(http.MethodPut, "/v1/stream/closing", "", "Content-Type", "text/plain").Status)
	sub := openSSE(t, h.srv.URL+"/v1/stream/closing?offset=-1&live=sse")
	typ, _, err := sub.next()
	require.NoError(t, err)
	require.Equal(t, "control", typ)
	testwait.Until(t, "one parked subscriber", func() bool { return h.srv.API.ParkedSubscribers() == 1 }, 5*time.Second)

	r := h.do(http.MethodPost, "/v1/stream/closing", "last", "Content-Type", "text/plain", "Stream-Closed", "true")
	require.Equal(t, http.StatusNoContent, r.Status)
	typ, data, err := sub.next()
	require.NoError(t, err)
	require.Equal(t, "data", typ)
	require.Equal(t, "last", data)
	typ, data, err = sub.next()
	require.NoError(t, err)
	require.Equal(t, "control", typ)
	require.Contains(t, data, `"streamClosed":true`)
	require.NotContains(t, data, "streamCursor")
	_, _, err = sub.next()
	require.ErrorIs(t, err, io.EOF)
}
