//go:build unix

package api_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/streamdb"
)

const mib = 1 << 20

// rawConn dials the test server with a tiny receive buffer (no autotuning), so that a
// response the test does not read stays stuck in the server's write after a few MiB of
// socket buffers instead of vanishing into the kernel.
func rawConn(t *testing.T, h *harness) net.Conn {
	t.Helper()
	u, err := url.Parse(h.srv.URL)
	require.NoError(t, err)
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", u.Host)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// sendRaw writes a request head (and the start of a body) on conn.
func sendRaw(t *testing.T, conn net.Conn, method, path string, headers ...string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: test\r\n", method, path)
	for i := 0; i+1 < len(headers); i += 2 {
		fmt.Fprintf(&b, "%s: %s\r\n", headers[i], headers[i+1])
	}
	b.WriteString("\r\n")
	_, err := conn.Write([]byte(b.String()))
	require.NoError(t, err)
}

// requireBusy is the answer of a request that did not get its bytes in flight.
func requireBusy(t *testing.T, r *response) {
	t.Helper()
	requireError(t, r, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE",
		"The server holds too many bytes for requests in flight; retry shortly")
	require.Equal(t, "1", r.Header.Get("Retry-After"))
}

// requireInFlight waits until the server holds exactly n bytes in flight.
func requireInFlight(t *testing.T, h *harness, n int64, why string) {
	t.Helper()
	testwait.Until(t, fmt.Sprintf("%s: %d bytes in flight", why, n), func() bool { return h.srv.API.BytesInFlight() == n }, 20*time.Second)
}

// tail is the stream's next offset, as who sees it (each principal of these tests uses
// streams of its own).
func tail(t *testing.T, h *harness, path, who string) string {
	t.Helper()
	var as []string
	if who != "" {
		as = []string{"Electric-Principal", who}
	}
	r := h.do(http.MethodHead, path, nil, as...)
	requireStatus(t, r, http.StatusOK)
	return r.Header.Get("Stream-Next-Offset")
}

// Slow readers of a large message hold their principal's share and no more: later
// readers of that principal get 503 + Retry-After instead of growing the process, others
// are still served, and once the slow readers' write deadline passes their connections
// are closed and every byte is released.
func TestSlowReadersHoldTheirShareUntilTheirWriteDeadline(t *testing.T) {
	const size = 6 * mib
	h := setup(t, testserver.Options{QuietLogs: true, API: api.Config{
		MaxAppendBytes: 8 * mib, MaxBytesInFlight: 48 * mib, MaxPrincipalBytesInFlight: 3 * size,
		BytesInFlightWait: 200 * time.Millisecond, WriteTimeout: 3 * time.Second, WriteMinRate: 1 << 30}})
	requireStatus(t, h.do(http.MethodPut, "/big", bytes.Repeat([]byte("x"), size), "Content-Type", "application/octet-stream",
		"Electric-Principal", "user:slow"), http.StatusCreated)
	requireStatus(t, h.do(http.MethodPut, "/small", `[{"n":1}]`, "Electric-Principal", "user:other"), http.StatusCreated)
	requireInFlight(t, h, 0, "after the appends")

	// Three readers that never read fill the slow principal's share.
	var slow []net.Conn
	for range 3 {
		conn := rawConn(t, h)
		sendRaw(t, conn, "GET", "/big?offset=-1", "Electric-Principal", "user:slow")
		slow = append(slow, conn)
	}
	requireInFlight(t, h, 3*size, "three stuck readers")

	requireBusy(t, h.do(http.MethodGet, "/big?offset=-1", nil, "Electric-Principal", "user:slow"))
	other := h.do(http.MethodGet, "/small?offset=-1", nil, "Electric-Principal", "user:other")
	requireStatus(t, other, http.StatusOK)
	require.JSONEq(t, `[{"n":1}]`, string(other.Body))
	requireInFlight(t, h, 3*size, "the served reads released their bytes")

	// The write deadline (3 s here) cuts the stuck responses and frees their bytes.
	requireInFlight(t, h, 0, "the write deadline passed")
	for _, conn := range slow {
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
		n, err := io.Copy(io.Discard, conn)
		require.NoError(t, err, "the server closed the connection")
		require.Less(t, n, int64(size), "the response was cut short")
	}
	r := h.do(http.MethodGet, "/big?offset=-1", nil, "Electric-Principal", "user:slow")
	requireStatus(t, r, http.StatusOK)
	require.Len(t, r.Body, size)
	require.Equal(t, fmt.Sprint(size), r.Header.Get("Content-Length"))
}

// Appends whose bodies would take more than a principal's share, or than the budget,
// wait briefly and are refused with 503 + Retry-After, before a byte of theirs is read:
// nothing is written, and the same append succeeds once the bytes are free.
func TestAppendsBeyondTheBudgetAreRefusedAndWriteNothing(t *testing.T) {
	const body = 2 * mib // reserved three times over (body, bytea array, Bind message): 6 MiB
	h := setup(t, testserver.Options{QuietLogs: true, API: api.Config{
		MaxAppendBytes: 4 * mib, MaxBytesInFlight: 24 * mib, MaxPrincipalBytesInFlight: 12 * mib,
		BytesInFlightWait: 100 * time.Millisecond}})
	for _, who := range []string{"a", "b", "c"} {
		requireStatus(t, h.do(http.MethodPut, "/"+who, `[{"n":0}]`, "Electric-Principal", "user:"+who), http.StatusCreated)
	}
	beforeA, beforeC := tail(t, h, "/a", "user:a"), tail(t, h, "/c", "user:c")

	// Appends that announce 2 MiB and send a few bytes of it hold 6 MiB each.
	stall := func(who string) net.Conn {
		conn := rawConn(t, h)
		sendRaw(t, conn, "POST", "/"+who, "Electric-Principal", "user:"+who, "Content-Type", "application/json",
			"Content-Length", fmt.Sprint(body))
		_, err := conn.Write([]byte(`[{"n":`))
		require.NoError(t, err)
		return conn
	}
	a1, a2 := stall("a"), stall("a")
	requireInFlight(t, h, 6*body, "user:a's share is full")
	requireBusy(t, h.do(http.MethodPost, "/a", `[{"n":1}]`, "Electric-Principal", "user:a"))
	b1, b2 := stall("b"), stall("b")
	requireInFlight(t, h, 12*body, "the budget is full")
	requireBusy(t, h.do(http.MethodPost, "/c", `[{"n":1}]`, "Electric-Principal", "user:c"))
	require.Equal(t, beforeA, tail(t, h, "/a", "user:a"), "nothing was written")
	require.Equal(t, beforeC, tail(t, h, "/c", "user:c"), "nothing was written")

	for _, conn := range []net.Conn{a1, a2, b1, b2} {
		require.NoError(t, conn.Close())
	}
	requireInFlight(t, h, 0, "the stalled bodies were abandoned")
	requireStatus(t, h.do(http.MethodPost, "/c", `[{"n":1}]`, "Electric-Principal", "user:c"), http.StatusNoContent)
	require.NotEqual(t, beforeC, tail(t, h, "/c", "user:c"))
}

// A body larger than one principal's share could never be reserved: it is refused at
// once with 413, whether its length is announced or not. A read larger than the share
// (its data is stored, so it must stay readable) is served when its principal holds
// nothing else, and waits for that otherwise.
func TestRequestsLargerThanTheShare(t *testing.T) {
	h := setup(t, testserver.Options{QuietLogs: true,
		Streams: streamdb.Options{MaxReadBytes: 16 * mib},
		API: api.Config{MaxAppendBytes: 8 * mib, MaxBytesInFlight: 16 * mib, MaxPrincipalBytesInFlight: 4 * mib,
			BytesInFlightWait: 100 * time.Millisecond}})
	const limit = 4 * mib / 3 // the share over the three copies an append holds
	const reader, other = "user:reader", "user:other"
	for path, who := range map[string]string{"/bin": reader, "/bin2": other} {
		requireStatus(t, h.do(http.MethodPut, path, nil, "Content-Type", "application/octet-stream", "Electric-Principal", who), http.StatusCreated)
	}
	empty := tail(t, h, "/bin", reader)

	// Announced: refused before the body is sent.
	conn := rawConn(t, h)
	sendRaw(t, conn, "POST", "/bin", "Content-Type", "application/octet-stream", "Content-Length", fmt.Sprint(limit+1),
		"Electric-Principal", reader)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	requireError(t, &response{Status: res.StatusCode, Header: res.Header, Body: body}, http.StatusRequestEntityTooLarge,
		"PAYLOAD_TOO_LARGE", fmt.Sprintf("Request body exceeds the limit of %d bytes", limit))
	// Not announced (chunked): refused once more than the limit has arrived.
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+"/bin", io.MultiReader(bytes.NewReader(bytes.Repeat([]byte("x"), limit+1))))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Electric-Principal", reader)
	req.ContentLength = -1 // unknown: sent chunked
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode)
	require.Equal(t, empty, tail(t, h, "/bin", reader), "nothing was written")
	requireInFlight(t, h, 0, "after the refusals")

	// Five messages of 1 MiB in each stream: one read of 5 MiB (the read cap is 16 MiB here).
	for path, who := range map[string]string{"/bin": reader, "/bin2": other} {
		for range 5 {
			requireStatus(t, h.do(http.MethodPost, path, bytes.Repeat([]byte("y"), mib), "Content-Type", "application/octet-stream",
				"Electric-Principal", who), http.StatusNoContent)
		}
	}
	r := h.do(http.MethodGet, "/bin?offset=-1", nil, "Electric-Principal", reader)
	requireStatus(t, r, http.StatusOK)
	require.Len(t, r.Body, 5*mib, "larger than the share, served alone")

	// While the same principal holds another reservation (a stalled append), it waits and
	// is refused; another principal is served.
	conn = rawConn(t, h)
	sendRaw(t, conn, "POST", "/bin", "Electric-Principal", reader, "Content-Type", "application/octet-stream",
		"Content-Length", fmt.Sprint(mib))
	requireInFlight(t, h, 3*mib, "the stalled append")
	requireBusy(t, h.do(http.MethodGet, "/bin?offset=-1", nil, "Electric-Principal", reader))
	r = h.do(http.MethodGet, "/bin2?offset=-1", nil, "Electric-Principal", other)
	requireStatus(t, r, http.StatusOK)
	require.Len(t, r.Body, 5*mib, "another principal's read larger than the share, served alone")
	require.NoError(t, conn.Close())
	requireInFlight(t, h, 0, "the stalled append abandoned")
	requireStatus(t, h.do(http.MethodGet, "/bin?offset=-1", nil, "Electric-Principal", reader), http.StatusOK)
}

// The write deadline bounds writes in progress, not connections: a live read that waits
// longer than the deadline is not cut, and a keep-alive connection that answered a read
// serves its next request after idling longer than the deadline.
func TestIdleLiveReadsOutliveTheWriteDeadline(t *testing.T) {
	const deadline = 150 * time.Millisecond
	h := setup(t, testserver.Options{QuietLogs: true, API: api.Config{WriteTimeout: deadline, WriteMinRate: 1 << 30,
		LongPollTimeout: 20 * time.Second}})
	requireStatus(t, h.do(http.MethodPut, "/live", `[{"n":0}]`), http.StatusCreated)
	requireStatus(t, h.do(http.MethodPut, "/lp", `[{"n":0}]`), http.StatusCreated)
	at := tail(t, h, "/live", "")
	// idle is how long the connections below stay idle: several deadlines. This sleep
	// paces the test on purpose: it is about wall-clock time passing with nothing written
	// against net/http's connection deadlines, which no test clock moves.
	idle := func() { time.Sleep(4 * deadline) }

	// SSE: the subscriber is parked in the stream's hub, idles, and gets the next append.
	sse := rawConn(t, h)
	sendRaw(t, sse, "GET", "/live?offset="+at+"&live=sse")
	events := bufio.NewReader(sse)
	readUntil := func(want string) {
		t.Helper()
		require.NoError(t, sse.SetReadDeadline(time.Now().Add(20*time.Second)))
		for {
			line, err := events.ReadString('\n')
			require.NoError(t, err)
			if strings.Contains(line, want) {
				return
			}
		}
	}
	readUntil(`"upToDate":true`)
	testwait.Until(t, "the SSE subscriber to park", func() bool { return h.srv.API.ParkedSubscribers() == 1 }, 20*time.Second)
	idle()
	requireStatus(t, h.do(http.MethodPost, "/live", `[{"n":1}]`), http.StatusNoContent)
	readUntil(`data:[{"n":1}]`)

	// Long-poll on a keep-alive connection: it waits past the deadline, gets the append,
	// then idles past the deadline and serves a catch-up read.
	lp := rawConn(t, h)
	responses := bufio.NewReader(lp)
	sendRaw(t, lp, "GET", "/lp?offset="+tail(t, h, "/lp", "")+"&live=long-poll")
	testwait.Until(t, "the long-poll waits (the SSE hub watches the other stream)", func() bool { return h.srv.Streams.Watched() == 2 }, 20*time.Second)
	idle()
	requireStatus(t, h.do(http.MethodPost, "/lp", `[{"n":2}]`), http.StatusNoContent)
	readResponse := func() (int, string) {
		t.Helper()
		require.NoError(t, lp.SetReadDeadline(time.Now().Add(20*time.Second)))
		res, err := http.ReadResponse(responses, nil)
		require.NoError(t, err)
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, string(body)
	}
	status, body := readResponse()
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `[{"n":2}]`, body)
	idle()
	sendRaw(t, lp, "GET", "/lp?offset=-1")
	status, body = readResponse()
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `[{"n":0},{"n":2}]`, body)
	requireInFlight(t, h, 0, "nothing is held by idle connections")
}
