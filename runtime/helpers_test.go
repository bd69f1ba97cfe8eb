package runtime_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/clock"
	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/internal/testbin"
	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/runtime"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wake"
)

const entitiesPath = "/_electric/entities"

// env is a complete in-process server (internal/testserver: server.Assemble, as
// cmd/server wires it) on a fresh database, with an HTTP client and a pool of its own on
// the same database.
type env struct {
	t     *testing.T
	base  string // http://127.0.0.1:port
	dbURL string
	pool  *pgxpool.Pool

	storeOnce sync.Once
	store     *streamdb.Store

	stop func() time.Duration // stops the server, returns how long stopping took
}

// fastWake fills the zero fields of o with values that keep the tests quick.
func fastWake(o wake.Options) wake.Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.Lease, 3*time.Second)
	def(&o.Heartbeat, 300*time.Millisecond)
	def(&o.SweepInterval, 100*time.Millisecond)
	def(&o.BaseBackoff, 20*time.Millisecond)
	def(&o.MaxBackoff, 200*time.Millisecond)
	return o
}

// startServer runs a server hosting defs until the test ends, on a fresh database;
// quiet servers log nothing (tests that provoke failures on purpose).
func startServer(t *testing.T, wo wake.Options, quiet bool, defs ...runtime.EntityDefinition) *env {
	t.Helper()
	return startServerOn(t, pgtest.URL(t), wo, quiet, defs...)
}

// startServerOn is startServer on an existing database (another replica of it).
func startServerOn(t *testing.T, dbURL string, wo wake.Options, quiet bool, defs ...runtime.EntityDefinition) *env {
	t.Helper()
	return startEnv(t, testserver.Options{DBURL: dbURL, Wake: fastWake(wo), QuietLogs: quiet, Definitions: defs})
}

// startServerOnClock is startServer on a server that keeps time with clk: leases, retry
// delays and timers pass when the test advances it.
func startServerOnClock(t *testing.T, clk clock.Clock, wo wake.Options, quiet bool, defs ...runtime.EntityDefinition) *env {
	t.Helper()
	return startEnv(t, testserver.Options{DBURL: pgtest.URL(t), Wake: fastWake(wo), QuietLogs: quiet, Definitions: defs,
		Streams: streamdb.Options{Clock: clk}})
}

func startEnv(t *testing.T, opts testserver.Options) *env {
	t.Helper()
	srv := testserver.Start(t, opts)
	dbURL := opts.DBURL
	e := &env{t: t, base: srv.URL, dbURL: dbURL}
	e.stop = func() time.Duration {
		start := time.Now()
		srv.Stop()
		return time.Since(start)
	}
	pool, err := pgxpool.New(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	e.pool = pool
	return e
}

// streams is a stream store of the test's own on the server's database (its commits
// reach the server through LISTEN/NOTIFY, like another process's).
func (e *env) streams() *streamdb.Store {
	e.storeOnce.Do(func() {
		s, err := streamdb.Open(context.Background(), e.pool, streamdb.Options{})
		require.NoError(e.t, err)
		e.t.Cleanup(s.Close)
		e.store = s
	})
	return e.store
}

// response is a fully read HTTP response.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// do sends a request to base. body is nil, a string (sent as is) or a value sent as JSON.
func do(t *testing.T, base, method, path string, body any) *response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, base+path, rd)
	require.NoError(t, err)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return &response{Status: res.StatusCode, Header: res.Header, Body: data}
}

func (e *env) do(method, path string, body any) *response {
	e.t.Helper()
	return do(e.t, e.base, method, path, body)
}

// spawn creates typ/id with the body (nil: {}) and returns the entity URL.
func spawn(t *testing.T, base, typ, id string, body any) string {
	t.Helper()
	if body == nil {
		body = "{}"
	}
	r := do(t, base, http.MethodPut, entitiesPath+"/"+typ+"/"+id, body)
	require.Equal(t, http.StatusCreated, r.Status, "spawn %s/%s: %s", typ, id, r.Body)
	return "/" + typ + "/" + id
}

func (e *env) spawn(typ, id string, body any) string {
	e.t.Helper()
	return spawn(e.t, e.base, typ, id, body)
}

// send posts a message (a JSON value or a raw JSON string) and requires 200.
func send(t *testing.T, base, url string, body any) {
	t.Helper()
	r := do(t, base, http.MethodPost, entitiesPath+url+"/send", body)
	require.Equal(t, http.StatusOK, r.Status, "send to %s: %s", url, r.Body)
}

func (e *env) send(url string, body any) {
	e.t.Helper()
	send(e.t, e.base, url, body)
}

func (e *env) signal(url string, body any) {
	e.t.Helper()
	r := e.do(http.MethodPost, entitiesPath+url+"/signal", body)
	require.Equal(e.t, http.StatusOK, r.Status, "signal %s: %s", url, r.Body)
}

func (e *env) kill(url string) {
	e.t.Helper()
	r := e.do(http.MethodDelete, entitiesPath+url, nil)
	require.Equal(e.t, http.StatusOK, r.Status, "kill %s: %s", url, r.Body)
}

func (e *env) status(url string) string {
	e.t.Helper()
	r := e.do(http.MethodGet, entitiesPath+url, nil)
	require.Equal(e.t, http.StatusOK, r.Status, "%s", r.Body)
	var v struct {
		Status string `json:"status"`
	}
	require.NoError(e.t, json.Unmarshal(r.Body, &v))
	return v.Status
}

// wakeStatus is GET /_electric/entities<url>/wake.
func wakeStatus(t *testing.T, base, url string) wake.Status {
	t.Helper()
	r := do(t, base, http.MethodGet, entitiesPath+url+"/wake", nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	var st wake.Status
	require.NoError(t, json.Unmarshal(r.Body, &st), "%s", r.Body)
	return st
}

func (e *env) wakeStatus(url string) wake.Status {
	e.t.Helper()
	return wakeStatus(e.t, e.base, url)
}

// event is one State Protocol event read back from a stream.
type event struct {
	Raw     json.RawMessage
	Type    string            `json:"type"`
	Key     string            `json:"key"`
	Value   json.RawMessage   `json:"value"`
	Headers map[string]string `json:"headers"`
}

func (ev event) op() string { return ev.Headers["operation"] }

// field decodes one member of the event's value.
func (ev event) field(t *testing.T, name string, v any) {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(ev.Value, &m), "%s", ev.Raw)
	raw, ok := m[name]
	require.True(t, ok, "no %q in %s", name, ev.Raw)
	require.NoError(t, json.Unmarshal(raw, v), "%s", ev.Raw)
}

func (ev event) str(t *testing.T, name string) string {
	t.Helper()
	var s string
	ev.field(t, name, &s)
	return s
}

// streamRead is a main stream read to its tail.
type streamRead struct {
	Events []event
	Closed bool
}

// readStream reads <url>/main from offset ("-1": the start) to the tail.
func readStream(t *testing.T, base, url, offset string) streamRead {
	t.Helper()
	var out streamRead
	for {
		r := do(t, base, http.MethodGet, url+"/main?offset="+offset, nil)
		require.Equal(t, http.StatusOK, r.Status, "read %s: %s", url, r.Body)
		var raws []json.RawMessage
		require.NoError(t, json.Unmarshal(r.Body, &raws), "%s", r.Body)
		for _, raw := range raws {
			var ev event
			require.NoError(t, json.Unmarshal(raw, &ev), "%s", raw)
			ev.Raw = raw
			out.Events = append(out.Events, ev)
		}
		out.Closed = r.Header.Get("Stream-Closed") == "true"
		if r.Header.Get("Stream-Up-To-Date") == "true" || out.Closed {
			return out
		}
		next := r.Header.Get("Stream-Next-Offset")
		require.NotEqual(t, offset, next)
		offset = next
	}
}

func (e *env) events(url string) []event {
	e.t.Helper()
	return readStream(e.t, e.base, url, "-1").Events
}

func ofType(events []event, typ string) []event {
	var out []event
	for _, ev := range events {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// after returns the events that follow the first event of type typ with key key.
func after(t *testing.T, events []event, typ, key string) []event {
	t.Helper()
	for i, ev := range events {
		if ev.Type == typ && ev.Key == key {
			return events[i+1:]
		}
	}
	t.Fatalf("no %s event %q in the stream", typ, key)
	return nil
}

// inboxOrder lists the keys of the inbox messages (inserts) in stream order.
func inboxOrder(events []event) []string {
	var out []string
	for _, ev := range events {
		if ev.Type == "inbox" && ev.op() == "insert" {
			out = append(out, ev.Key)
		}
	}
	return out
}

// texts lists the texts of the handlers' replies in stream order: WriteText writes each
// as one text_delta (see reply.go).
func texts(t *testing.T, events []event) []string {
	t.Helper()
	var out []string
	for _, ev := range ofType(events, "text_delta") {
		out = append(out, ev.str(t, "delta"))
	}
	return out
}

// requireFailedRun checks what a given-up unit of work leaves (wire.FailureEvents): a run
// inserted as started, the last error (linked to the run), and the run updated to failed.
func requireFailedRun(t *testing.T, evs []event, message string) {
	t.Helper()
	runs := ofType(evs, "run")
	require.Len(t, runs, 2, "%v", eventTypes(evs))
	key := runs[0].Key
	require.Regexp(t, `^run-[0-9]+$`, key)
	require.Equal(t, "insert", runs[0].op())
	require.JSONEq(t, `{"status":"started"}`, string(runs[0].Value))
	require.Equal(t, key, runs[1].Key)
	require.Equal(t, "update", runs[1].op())
	require.JSONEq(t, `{"status":"failed","finish_reason":"error"}`, string(runs[1].Value))
	errs := ofType(evs, "error")
	require.Len(t, errs, 1)
	require.Equal(t, key, errs[0].str(t, "run_id"))
	require.Equal(t, message, errs[0].str(t, "message"))
	require.True(t, evs[0].Type == "run" && evs[len(evs)-1].Type == "run", "the run brackets the failure: %v", eventTypes(evs))
}

func eventTypes(events []event) []string {
	out := make([]string, len(events))
	for i, ev := range events {
		out[i] = ev.Type
	}
	return out
}

// seen is one handler run as the handler saw it.
type seen struct {
	Entity  string
	Wake    runtime.Wake
	Attempt int
	At      time.Time
}

func (s seen) key() string {
	if w, ok := s.Wake.(runtime.InboxWake); ok {
		return w.Key
	}
	return ""
}

// recorder collects handler runs.
type recorder struct {
	mu   sync.Mutex
	runs []seen
}

func (r *recorder) add(ctx *runtime.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs = append(r.runs, seen{Entity: ctx.Entity.URL, Wake: ctx.Wake, Attempt: ctx.Attempt, At: time.Now()})
}

// of returns the runs of entity url so far.
func (r *recorder) of(url string) []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []seen
	for _, s := range r.runs {
		if s.Entity == url {
			out = append(out, s)
		}
	}
	return out
}

// inboxKeys lists the keys of the inbox wakes of url in the order they were run.
func (r *recorder) inboxKeys(url string) []string {
	var out []string
	for _, s := range r.of(url) {
		if k := s.key(); k != "" {
			out = append(out, k)
		}
	}
	return out
}

// wait waits for a run of url that match accepts and returns it.
func (r *recorder) wait(t *testing.T, url string, timeout time.Duration, match func(seen) bool) seen {
	t.Helper()
	var found seen
	defer func() { // also when the wait fails the test
		if t.Failed() {
			t.Logf("runs of %s: %v", url, kinds(r.of(url)))
		}
	}()
	testwait.Until(t, "a matching run of "+url, func() bool {
		for _, s := range r.of(url) {
			if match(s) {
				found = s
				return true
			}
		}
		return false
	}, timeout)
	return found
}

// waitKey waits for the inbox wake of url with key.
func (r *recorder) waitKey(t *testing.T, url, key string, timeout time.Duration) seen {
	t.Helper()
	return r.wait(t, url, timeout, func(s seen) bool { return s.key() == key })
}

func kinds(runs []seen) []string {
	out := make([]string, len(runs))
	for i, s := range runs {
		out[i] = s.Wake.Kind()
		if k := s.key(); k != "" {
			out[i] += ":" + k
		}
		if sig, ok := s.Wake.(runtime.SignalWake); ok {
			out[i] += ":" + sig.Signal
		}
		if ob, ok := s.Wake.(runtime.ObservationWake); ok {
			if ob.Event != nil {
				out[i] += ":" + ob.Event.Type
			} else {
				out[i] += ":" + ob.Lifecycle
			}
		}
	}
	return out
}

// jsonEq compares JSON texts by content.
func jsonEq(t *testing.T, want string, got []byte, msgAndArgs ...any) {
	t.Helper()
	require.JSONEq(t, want, string(got), msgAndArgs...)
}

// queryInt runs a query returning one integer.
func (e *env) queryInt(sql string, args ...any) int64 {
	e.t.Helper()
	var n int64
	require.NoError(e.t, e.pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// --- real processes (the wakeprobe) ---

// probeBinary builds internal/tools/wakeprobe once per test run.
func probeBinary(t *testing.T) string {
	t.Helper()
	return testbin.Build(t, "github.com/entityd/entityd/internal/tools/wakeprobe")
}

// process is a running wakeprobe.
type process struct {
	t    *testing.T
	cmd  *exec.Cmd
	base string
	done chan struct{}
	log  string
}

// startProbe starts a wakeprobe on dbURL and waits until it serves.
func startProbe(t *testing.T, dbURL string, args ...string) *process {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "wakeprobe.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(probeBinary(t), append([]string{"--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL)
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &process{t: t, cmd: cmd, done: make(chan struct{}), log: logPath}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "LISTENING "); ok {
				select {
				case addr <- a:
				default:
				}
			}
		}
	}()
	go func() { _ = cmd.Wait(); logFile.Close(); close(p.done) }()
	t.Cleanup(p.kill)
	select {
	case a := <-addr:
		p.base = "http://" + a
	case <-p.done:
		t.Fatalf("wakeprobe exited during start; log:\n%s", p.logText())
	case <-time.After(time.Minute):
		p.kill()
		t.Fatalf("wakeprobe did not start; log:\n%s", p.logText())
	}
	return p
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// kill SIGKILLs the process and waits for it to be gone.
func (p *process) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

func (p *process) logText() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

func pgtestURL(t *testing.T) string { return pgtest.URL(t) }

// pgxPool opens a pool on dbURL, closed when the test ends.
func pgxPool(t *testing.T, dbURL string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}
