package livefeed_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/livefeed"
)

// feedClient is one open session, its events demultiplexed by read id.
type feedClient struct {
	t       *testing.T
	base    string
	auth    string
	session string
	cancel  context.CancelFunc
	events  chan feedEvent
	done    chan struct{}
}

type feedEvent struct {
	Name string
	ID   string
	Data map[string]any
}

func do(t *testing.T, method, url, auth, body string, hdr ...string) (int, http.Header, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(data)
}

// openFeed opens a session as the holder of token auth ("" in dev mode).
func openFeed(t *testing.T, base, auth string) *feedClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", base+livefeed.Prefix, nil)
	require.NoError(t, err)
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	require.Equal(t, "no-store", res.Header.Get("Cache-Control"))
	c := &feedClient{t: t, base: base, auth: auth, cancel: cancel, events: make(chan feedEvent, 1024), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		defer close(c.events)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var name string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				name = line[7:]
			case strings.HasPrefix(line, "data: "):
				var d map[string]any
				_ = json.Unmarshal([]byte(line[6:]), &d)
				id, _ := d["id"].(string)
				if name == "open" {
					id, _ = d["session"].(string)
				}
				c.events <- feedEvent{Name: name, ID: id, Data: d}
			}
		}
	}()
	ev := c.next(5 * time.Second)
	require.Equal(t, "open", ev.Name)
	require.Len(t, ev.ID, 32)
	c.session = ev.ID
	t.Cleanup(c.close)
	return c
}

func (c *feedClient) close() {
	c.cancel()
	<-c.done
}

func (c *feedClient) next(d time.Duration) feedEvent {
	c.t.Helper()
	select {
	case ev, ok := <-c.events:
		require.True(c.t, ok, "the feed ended")
		return ev
	case <-time.After(d):
		c.t.Fatal("no feed event in time")
		return feedEvent{}
	}
}

// post registers a read and returns the POST's status and body.
func (c *feedClient) post(id, path string, headers map[string]string) (int, string) {
	body, _ := json.Marshal(map[string]any{"id": id, "path": path, "headers": headers})
	status, _, out := do(c.t, "POST", c.base+livefeed.Prefix+"/"+c.session+"/requests", c.auth, string(body))
	return status, out
}

// response is a read's answer assembled from the feed's events.
type response struct {
	status  int
	headers map[string]string
	body    strings.Builder
	ended   bool
}

// read follows the events of read id until until returns true (or it ends).
func (c *feedClient) read(id string, until func(*response) bool) *response {
	c.t.Helper()
	r := &response{}
	for !until(r) {
		ev := c.next(10 * time.Second)
		if ev.ID != id {
			continue
		}
		switch ev.Name {
		case "head":
			r.status = int(ev.Data["status"].(float64))
			r.headers = map[string]string{}
			for k, v := range ev.Data["headers"].(map[string]any) {
				r.headers[strings.ToLower(k)] = v.(string)
			}
		case "body":
			if s, ok := ev.Data["data"].(string); ok {
				r.body.WriteString(s)
			} else {
				b, _ := base64.StdEncoding.DecodeString(ev.Data["b64"].(string))
				r.body.Write(b)
			}
		case "end":
			r.ended = true
			return r
		case "fail":
			c.t.Fatalf("read %s failed: %v", id, ev.Data)
		}
	}
	return r
}

func ended(r *response) bool { return r.ended }

// TestStreamThroughFeed: a catch-up read of a stream and a live SSE read through the
// feed answer what the same reads answer directly, and appends arrive live.
func TestStreamThroughFeed(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	status, _, out := do(t, "PUT", srv.URL+"/notes/a", "", "", "Content-Type", "application/json")
	require.Equal(t, http.StatusCreated, status, out)
	for _, v := range []string{`{"n":1}`, `{"n":"é"}`} {
		status, _, out = do(t, "POST", srv.URL+"/notes/a", "", v)
		require.Equal(t, http.StatusNoContent, status, out)
	}
	status, hdr, direct := do(t, "GET", srv.URL+"/notes/a?offset=-1", "", "")
	require.Equal(t, http.StatusOK, status)

	f := openFeed(t, srv.URL, "")
	st, out := f.post("r1", "/notes/a?offset=-1", map[string]string{"Accept": "application/json"})
	require.Equal(t, http.StatusAccepted, st, out)
	r := f.read("r1", ended)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, direct, r.body.String())
	require.Equal(t, hdr.Get("Stream-Next-Offset"), r.headers["stream-next-offset"])
	require.Equal(t, hdr.Get("Content-Type"), r.headers["content-type"])

	// live: an SSE read from the tail sees the next append as it is made
	next := hdr.Get("Stream-Next-Offset")
	st, out = f.post("live", "/notes/a?offset="+next+"&live=sse", map[string]string{"accept": "text/event-stream"})
	require.Equal(t, http.StatusAccepted, st, out)
	r = f.read("live", func(r *response) bool { return r.status != 0 })
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "text/event-stream", r.headers["content-type"])
	status, _, out = do(t, "POST", srv.URL+"/notes/a", "", `{"n":"live"}`)
	require.Equal(t, http.StatusNoContent, status, out)
	r = f.read("live", func(r *response) bool { return strings.Contains(r.body.String(), `"live"`) })
	require.Contains(t, r.body.String(), "event: data")

	// cancelling the live read stops it
	testwait.Until(t, "one read in flight", func() bool { return srv.Feed.Reads() == 1 }, 5*time.Second)
	status, _, _ = do(t, "DELETE", srv.URL+livefeed.Prefix+"/"+f.session+"/requests/live", "", "")
	require.Equal(t, http.StatusNoContent, status)
	testwait.Until(t, "the read to stop", func() bool { return srv.Feed.Reads() == 0 }, 5*time.Second)

	// the session's end stops what is in it
	st, _ = f.post("live2", "/notes/a?offset="+next+"&live=sse", nil)
	require.Equal(t, http.StatusAccepted, st)
	testwait.Until(t, "one read in flight", func() bool { return srv.Feed.Reads() == 1 }, 5*time.Second)
	f.close()
	testwait.Until(t, "the session to end", func() bool { return srv.Feed.Sessions() == 0 && srv.Feed.Reads() == 0 }, 5*time.Second)
}

// TestShapeThroughFeed: an Electric shape's first request answers through the feed
// with its handle and offset headers.
func TestShapeThroughFeed(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	status, _, out := do(t, "POST", srv.URL+"/_electric/entity-types", "", `{"name":"doc","description":"d"}`)
	require.Equal(t, http.StatusCreated, status, out)
	status, _, out = do(t, "PUT", srv.URL+"/_electric/entities/doc/d1", "", `{}`)
	require.Equal(t, http.StatusCreated, status, out)
	f := openFeed(t, srv.URL, "")
	st, out := f.post("s", "/_electric/electric/v1/shape?table=entities&offset=-1", nil)
	require.Equal(t, http.StatusAccepted, st, out)
	r := f.read("s", ended)
	require.Equal(t, http.StatusOK, r.status)
	require.NotEmpty(t, r.headers["electric-handle"])
	require.NotEmpty(t, r.headers["electric-offset"])
	require.Contains(t, r.body.String(), "/doc/d1")
}

// TestFeedIsItsOwners: another principal is told the session does not exist, and a read
// meets the access decision the same request meets directly.
func TestFeedIsItsOwners(t *testing.T) {
	key := testserver.NewJWTKey(t)
	srv := testserver.Start(t, testserver.Options{API: apiConfig(key)})
	carol, sam := key.Token(t, "user:carol"), key.Token(t, "user:sam")
	status, _, out := do(t, "PUT", srv.URL+"/notes/carol", carol, "", "Content-Type", "application/json")
	require.Equal(t, http.StatusCreated, status, out)

	f := openFeed(t, srv.URL, sam)
	// carol cannot use sam's session: the same 404 as a session that does not exist
	body := `{"id":"x","path":"/notes/carol?offset=-1"}`
	status, _, out = do(t, "POST", srv.URL+livefeed.Prefix+"/"+f.session+"/requests", carol, body)
	require.Equal(t, http.StatusNotFound, status, out)
	status, _, unknown := do(t, "POST", srv.URL+livefeed.Prefix+"/0123456789abcdef0123456789abcdef/requests", carol, body)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, unknown, out)
	status, _, _ = do(t, "DELETE", srv.URL+livefeed.Prefix+"/"+f.session+"/requests/x", carol, "")
	require.Equal(t, http.StatusNotFound, status)
	status, _, _ = do(t, "POST", srv.URL+livefeed.Prefix+"/"+f.session+"/requests", "", body)
	require.Equal(t, http.StatusUnauthorized, status)

	// sam may not read carol's stream: through the feed as directly
	wantStatus, _, wantBody := do(t, "GET", srv.URL+"/notes/carol?offset=-1", sam, "")
	require.Equal(t, http.StatusForbidden, wantStatus)
	st, out := f.post("x", "/notes/carol?offset=-1", nil)
	require.Equal(t, http.StatusAccepted, st, out)
	r := f.read("x", ended)
	require.Equal(t, wantStatus, r.status)
	require.Equal(t, wantBody, r.body.String())
	// credentials in the body are refused, never used
	st, out = f.post("y", "/notes/carol?offset=-1", map[string]string{"Authorization": "Bearer " + carol})
	require.Equal(t, http.StatusBadRequest, st, out)
}

// TestFeedHostileInput: what the feed refuses, and its budgets.
func TestFeedHostileInput(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Feed: livefeed.Options{MaxSessionsPerPrincipal: 2, MaxRequestsPerSession: 2}})
	f := openFeed(t, srv.URL, "")
	url := srv.URL + livefeed.Prefix + "/" + f.session + "/requests"
	for _, c := range []struct {
		name, body string
		want       int
	}{
		{"not JSON", `{"id":`, 400},
		{"not an object", `[1]`, 400},
		{"huge body", `{"id":"a","path":"/` + strings.Repeat("a", livefeed.MaxRequestBytes) + `"}`, 413},
		{"a method", `{"id":"a","path":"/notes/a","method":"POST"}`, 400},
		{"no id", `{"path":"/notes/a"}`, 400},
		{"long id", `{"id":"` + strings.Repeat("i", 65) + `","path":"/notes/a"}`, 400},
		{"absolute URL", `{"id":"a","path":"http://example.com/notes/a"}`, 400},
		{"scheme-relative URL", `{"id":"a","path":"//example.com/notes/a"}`, 400},
		{"relative path", `{"id":"a","path":"notes/a"}`, 400},
		{"the feed itself", `{"id":"a","path":"/_electric/feed"}`, 400},
		{"the feed's requests", `{"id":"a","path":"/_electric/FEED/x/requests"}`, 400},
		{"a dot segment", `{"id":"a","path":"/x/../_electric/feed"}`, 400},
		{"a header not allowed", `{"id":"a","path":"/notes/a","headers":{"Cookie":"x"}}`, 400},
		{"Electric-Principal in the body", `{"id":"a","path":"/notes/a","headers":{"Electric-Principal":"system:x"}}`, 400},
		{"a header with a newline", `{"id":"a","path":"/notes/a","headers":{"Accept":"a\r\nX: y"}}`, 400},
	} {
		status, _, out := do(t, "POST", url, "", c.body)
		require.Equal(t, c.want, status, "%s: %s", c.name, out)
		require.Contains(t, out, `"error"`, c.name)
	}
	require.Equal(t, 0, srv.Feed.Reads())
	status, _, _ := do(t, "POST", srv.URL+livefeed.Prefix+"/nope/requests", "", `{"id":"a","path":"/notes/a"}`)
	require.Equal(t, http.StatusNotFound, status)

	// reads in flight per session: two live reads, the third is refused
	status, _, out := do(t, "PUT", srv.URL+"/notes/a", "", "", "Content-Type", "application/json")
	require.Equal(t, http.StatusCreated, status, out)
	for _, id := range []string{"l1", "l2"} {
		st, out := f.post(id, "/notes/a?offset=now&live=sse", nil)
		require.Equal(t, http.StatusAccepted, st, out)
	}
	st, out := f.post("l1", "/notes/a?offset=now&live=sse", nil)
	require.Contains(t, []int{http.StatusConflict, http.StatusTooManyRequests}, st, out)
	st, out = f.post("l3", "/notes/a?offset=now&live=sse", nil)
	require.Equal(t, http.StatusTooManyRequests, st, out)

	// sessions per principal
	openFeed(t, srv.URL, "")
	req, _ := http.NewRequest("GET", srv.URL+livefeed.Prefix, nil)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	data, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode, string(data))
	require.Contains(t, string(data), "TOO_MANY_SESSIONS")
}
