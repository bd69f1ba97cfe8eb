package livefeed_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/livefeed"
)

// TestStalledReaderLosesItsSession: a client that opens a session, asks for more than
// the connection can buffer and then reads nothing loses the session once a write of it
// takes longer than the write deadline; the read in it stops too.
func TestStalledReaderLosesItsSession(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Feed: livefeed.Options{WriteTimeout: 300 * time.Millisecond, QueueEvents: 4}})
	status, _, out := do(t, "PUT", srv.URL+"/big", "", "", "Content-Type", "application/json")
	require.Equal(t, http.StatusCreated, status, out)
	chunk := `{"pad":"` + strings.Repeat("x", 1<<20) + `"}`
	batch := "[" + strings.Repeat(chunk+",", 3) + chunk + "]"
	for range 6 { // 24 MiB: more than the socket buffers hold
		status, _, out = do(t, "POST", srv.URL+"/big", "", batch)
		require.Equal(t, http.StatusNoContent, status, out)
	}

	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	conn, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", livefeed.Prefix, u.Host)
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	var session string
	for session == "" {
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			session = strings.TrimSuffix(strings.TrimPrefix(data, `{"session":"`), `"}`)
		}
	}
	require.Len(t, session, 32)
	// a catch-up answer is bounded: ask for many
	for i := range 64 {
		body := fmt.Sprintf(`{"id":"big%d","path":"/big?offset=-1"}`, i)
		status, _, out = do(t, "POST", srv.URL+livefeed.Prefix+"/"+session+"/requests", "", body)
		if status == http.StatusNotFound {
			break // already gone
		}
		require.Equal(t, http.StatusAccepted, status, out)
	}
	// from here the client reads nothing
	testwait.Until(t, "the stalled session to end", func() bool { return srv.Feed.Sessions() == 0 && srv.Feed.Reads() == 0 }, 20*time.Second)
}
