package dssub

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/streamdb"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// harness is one entityd process (store, API, subscriptions) over HTTP.
type harness struct {
	t     *testing.T
	URL   string
	DBURL string
	Pool  *pgxpool.Pool
	Store *streamdb.Store
	Svc   *Service
}

// testOptions are fast timings for tests.
func testOptions() Options {
	return Options{PollInterval: 50 * time.Millisecond, RetryBase: 100 * time.Millisecond, RetryMax: 400 * time.Millisecond,
		ReconcileInterval: time.Hour}
}

// startHarness starts a complete entityd (internal/testserver: server.Assemble, as
// cmd/server wires it) on dbURL, or on a fresh database when dbURL is empty, with opts
// for its subscriptions.
func startHarness(t *testing.T, dbURL string, opts Options) *harness {
	t.Helper()
	s := StartTestServer(t, dbURL, opts)
	return &harness{t: t, URL: s.URL, DBURL: s.DBURL, Pool: s.Pool, Store: s.Store, Svc: s.Subs}
}

type response struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("response %d is not a JSON object: %q", r.Status, r.Body)
	}
	return m
}

func (r response) errorCode(t *testing.T) string {
	t.Helper()
	e, _ := r.json(t)["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// do sends a request to url (absolute, or a path on the harness). A string body is sent
// as is, anything else as JSON. headers alternate names and values.
func (h *harness) do(method, url string, body any, headers ...string) response {
	h.t.Helper()
	if len(url) > 0 && url[0] == '/' {
		url = h.URL + url
	}
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		data, err := json.Marshal(b)
		if err != nil {
			h.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: data}
}

func subPath(id string) string { return "/v1/stream/__ds/subscriptions/" + id }

func (h *harness) createSub(id string, cfg map[string]any) map[string]any {
	h.t.Helper()
	r := h.do("PUT", subPath(id), cfg)
	if r.Status != http.StatusCreated {
		h.t.Fatalf("create subscription %s: %d %s", id, r.Status, r.Body)
	}
	return r.json(h.t)
}

func (h *harness) getSub(id string) map[string]any {
	h.t.Helper()
	r := h.do("GET", subPath(id), nil)
	if r.Status != http.StatusOK {
		h.t.Fatalf("get subscription %s: %d %s", id, r.Status, r.Body)
	}
	return r.json(h.t)
}

// createStream creates a JSON stream with an initial message and returns its tail.
func (h *harness) createStream(path string, body string) string {
	h.t.Helper()
	r := h.do("PUT", "/v1/stream/"+path, body)
	if r.Status != http.StatusCreated {
		h.t.Fatalf("create stream %s: %d %s", path, r.Status, r.Body)
	}
	return r.Header.Get("Stream-Next-Offset")
}

func (h *harness) appendStream(path string, body string) string {
	h.t.Helper()
	r := h.do("POST", "/v1/stream/"+path, body)
	if r.Status != http.StatusNoContent {
		h.t.Fatalf("append to %s: %d %s", path, r.Status, r.Body)
	}
	return r.Header.Get("Stream-Next-Offset")
}

// streamOf finds a stream entry by path in a wake, claim or subscription body.
func streamOf(t *testing.T, streams any, path string) map[string]any {
	t.Helper()
	if m := findStream(streams, path); m != nil {
		return m
	}
	t.Fatalf("stream %s not in %v", path, streams)
	return nil
}

// findStream is streamOf for a stream that may not be linked yet (nil then).
func findStream(streams any, path string) map[string]any {
	list, _ := streams.([]any)
	for _, s := range list {
		m, _ := s.(map[string]any)
		if m["path"] == path {
			return m
		}
	}
	return nil
}

// received is one request a receiver got.
type received struct {
	Raw       []byte
	Signature string
	Body      webhookBody
}

// receiver is a webhook endpoint. answer decides each response (n counts from 1).
type receiver struct {
	t      *testing.T
	URL    string
	mu     sync.Mutex
	got    []received
	ch     chan received
	answer func(n int, r received) (int, string)
}

func newReceiver(t *testing.T, answer func(n int, r received) (int, string)) *receiver {
	rc := &receiver{t: t, ch: make(chan received, 100), answer: answer}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		rec := received{Raw: raw, Signature: r.Header.Get("Webhook-Signature")}
		if err := json.Unmarshal(raw, &rec.Body); err != nil {
			t.Errorf("webhook body is not JSON: %q", raw)
		}
		rc.mu.Lock()
		rc.got = append(rc.got, rec)
		n := len(rc.got)
		rc.mu.Unlock()
		status, body := 200, "{}"
		if rc.answer != nil {
			status, body = rc.answer(n, rec)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
		rc.ch <- rec
	}))
	t.Cleanup(srv.Close)
	rc.URL = srv.URL + "/webhook"
	return rc
}

func answerAlways(status int, body string) func(int, received) (int, string) {
	return func(int, received) (int, string) { return status, body }
}

// next waits for the next request.
func (rc *receiver) next(timeout time.Duration) received {
	rc.t.Helper()
	return testwait.Recv(rc.t, rc.ch, "a webhook request", timeout)
}

// quiet checks that no request arrives for d.
func (rc *receiver) quiet(d time.Duration) {
	rc.t.Helper()
	select {
	case r := <-rc.ch:
		rc.t.Fatalf("unexpected webhook request: %s", r.Raw)
	case <-time.After(d):
	}
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.got)
}

var sigRE = regexp.MustCompile(`^t=(\d+),kid=([^,]+),ed25519=([A-Za-z0-9_-]+)$`)

// verifySignature checks a Webhook-Signature header against the published JWKS.
func verifySignature(t *testing.T, h *harness, raw []byte, header string) bool {
	t.Helper()
	r := h.do("GET", "/v1/stream/__ds/jwks.json", nil)
	if r.Status != 200 || r.Header.Get("Content-Type") != "application/jwk-set+json" {
		t.Fatalf("jwks: %d %q", r.Status, r.Header.Get("Content-Type"))
	}
	var jwks struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(r.Body, &jwks); err != nil {
		t.Fatal(err)
	}
	m := sigRE.FindStringSubmatch(header)
	if m == nil {
		return false
	}
	ts, _ := strconv.ParseInt(m[1], 10, 64)
	if d := time.Since(time.Unix(ts, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return false
	}
	for _, k := range jwks.Keys {
		if k.Kid != m[2] || k.Kty != "OKP" || k.Crv != "Ed25519" || k.Alg != "EdDSA" {
			continue
		}
		pub, err := b64.DecodeString(k.X)
		if err != nil || len(pub) != ed25519.PublicKeySize {
			return false
		}
		sig, err := b64.DecodeString(m[3])
		if err != nil {
			return false
		}
		return ed25519.Verify(pub, append([]byte(m[1]+"."), raw...), sig)
	}
	return false
}

func callback(h *harness, wake webhookBody, body any) response {
	h.t.Helper()
	return h.do("POST", wake.CallbackURL, body, "Authorization", "Bearer "+wake.CallbackToken)
}
