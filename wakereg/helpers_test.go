package wakereg_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/internal/testserver"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// client talks to one server as one principal (dev mode's Electric-Principal header).
type client struct {
	t    testing.TB
	base string
	as   string
}

func (c client) call(method, path, body string, headers ...string) (int, string, http.Header) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	require.NoError(c.t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.as != "" {
		req.Header.Set("Electric-Principal", c.as)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(c.t, err)
	return res.StatusCode, string(data), res.Header
}

func (c client) must(want int, method, path, body string, headers ...string) string {
	c.t.Helper()
	status, out, _ := c.call(method, path, body, headers...)
	require.Equal(c.t, want, status, "%s %s: %s", method, path, out)
	return out
}

func (c client) registerType(name string) {
	c.t.Helper()
	c.must(http.StatusCreated, "POST", "/_electric/entity-types", `{"name":"`+name+`","description":"d"}`)
}

// spawn spawns url with the extra body members and returns its write token.
func (c client) spawn(url, members string) string {
	c.t.Helper()
	body := "{" + members + "}"
	status, out, h := c.call("PUT", "/_electric/entities"+url, body)
	require.Equal(c.t, http.StatusCreated, status, "spawn %s: %s", url, out)
	return h.Get("X-Write-Token")
}

// write appends events to an entity's main stream with its write token.
func (c client) write(url, token string, events ...string) {
	c.t.Helper()
	c.must(http.StatusNoContent, "POST", url+"/main", "["+strings.Join(events, ",")+"]", "Authorization", "Bearer "+token)
}

func (c client) wake(body string) (int, string) {
	c.t.Helper()
	status, out, _ := c.call("POST", "/_electric/wake", body)
	return status, out
}

type event struct {
	Type  string          `json:"type"`
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

type wakeValue struct {
	Timestamp     string            `json:"timestamp"`
	Source        string            `json:"source"`
	Timeout       bool              `json:"timeout"`
	Changes       []json.RawMessage `json:"changes"`
	FinishedChild *struct {
		URL       string  `json:"url"`
		Type      string  `json:"type"`
		RunStatus string  `json:"run_status"`
		Response  *string `json:"response"`
		Error     *string `json:"error"`
	} `json:"finished_child"`
}

// wakes reads the wake events on an entity's main stream.
func (c client) wakes(url string) []event {
	c.t.Helper()
	out := c.must(http.StatusOK, "GET", url+"/main?offset=-1", "")
	var evs []event
	require.NoError(c.t, json.Unmarshal([]byte(out), &evs))
	var w []event
	for _, e := range evs {
		if e.Type == "wake" {
			w = append(w, e)
		}
	}
	return w
}

// waitWakes waits (long-polling the stream) until url has at least n wake events, and
// returns them.
func (c client) waitWakes(url string, n int) []event {
	c.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		w := c.wakes(url)
		if len(w) >= n {
			return w
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s has %d wakes, want %d: %v", url, len(w), n, w)
		}
		_, _, h := c.call("HEAD", url+"/main", "")
		c.call("GET", url+"/main?live=long-poll&offset="+h.Get("Stream-Next-Offset"), "")
	}
}

func value(t testing.TB, e event) wakeValue {
	t.Helper()
	var v wakeValue
	require.NoError(t, json.Unmarshal(e.Value, &v))
	return v
}

func runEvent(key, op, status string) string {
	return fmt.Sprintf(`{"type":"run","key":%q,"value":{"status":%q},"headers":{"operation":%q}}`, key, status, op)
}

func textDelta(run, n, delta string) string {
	return fmt.Sprintf(`{"type":"text_delta","key":"%s-%s","value":{"run_id":%q,"delta":%q},"headers":{"operation":"insert"}}`, run, n, run, delta)
}

// finishRun writes a whole run: started, its text, finished.
func (c client) finishRun(url, token, run string, text ...string) {
	c.t.Helper()
	events := []string{runEvent(run, "insert", "started")}
	for i, s := range text {
		events = append(events, textDelta(run, fmt.Sprint(i), s))
	}
	events = append(events, runEvent(run, "update", "completed"))
	c.write(url, token, events...)
}

func start(t testing.TB, opts ...testserver.Options) *testserver.Server {
	var o testserver.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	o.QuietLogs = true
	return testserver.Start(t, o)
}
