package external_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/dssub"
	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/internal/testwait"
)

type env struct {
	t        *testing.T
	srv      *testserver.Server
	hooks    chan hook
	receiver string
}

func (e *env) hookURL(*testing.T) string { return e.receiver + "/wake" }

// hook is one webhook request the receiver got.
type hook struct {
	body      map[string]any
	raw       []byte
	signature string
}

// start runs a server and a webhook receiver that answers every wake 200 {} (the wake
// stays open for callbacks) and hands it to the test.
func start(t *testing.T) *env {
	t.Helper()
	e := startBare(t)
	// every user may spawn chats (a grant that comes with the registration)
	e.registerType(`{"name":"chat","description":"remote handler",` +
		`"permission_grants":[{"subject_kind":"principal_kind","subject_value":"user","permission":"spawn"}]}`)
	r := e.do("PUT", "/__ds/subscriptions/chat-handler",
		`{"type":"webhook","pattern":"/chat/**","webhook":{"url":"`+e.hookURL(t)+`"}}`)
	require.Equal(t, http.StatusCreated, r.status, r.text())
	return e
}

// startBare runs a server and the webhook receiver, with no type or subscription.
func startBare(t *testing.T) *env {
	t.Helper()
	t.Parallel()
	e := &env{t: t, hooks: make(chan hook, 64)}
	e.srv = testserver.Start(t, testserver.Options{QuietLogs: true,
		Subs: dssub.Options{PollInterval: 50 * time.Millisecond, RetryBase: 50 * time.Millisecond}})
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.hooks <- readHook(r)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(rc.Close)
	e.receiver = rc.URL
	return e
}

// readHook reads a webhook request (numbers kept as json.Number).
func readHook(r *http.Request) hook {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	_ = dec.Decode(&body)
	return hook{body: body, raw: raw, signature: r.Header.Get("Webhook-Signature")}
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err, s)
	return n
}

type resp struct {
	status  int
	body    []byte
	headers http.Header
}

func (r resp) text() string { return string(r.body) }

func (r resp) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), r.text())
	return m
}

func (e *env) do(method, path, body string, headers ...string) resp {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	require.NoError(e.t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	return resp{status: res.StatusCode, body: data, headers: res.Header}
}

func (e *env) registerType(body string) {
	r := e.do("POST", "/_electric/entity-types", body)
	require.Equal(e.t, http.StatusCreated, r.status, r.text())
}

// next is the next webhook wake, at most 10 s away.
func (e *env) next() hook {
	e.t.Helper()
	return testwait.Recv(e.t, e.hooks, "a webhook wake", 10*time.Second)
}

// verify checks a wake's Webhook-Signature against the server's JWKS.
func (e *env) verify(h hook) {
	e.t.Helper()
	var ts, kid, sig string
	for _, part := range strings.Split(h.signature, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "kid":
			kid = v
		case "ed25519":
			sig = v
		}
	}
	var jwks struct {
		Keys []struct {
			Kid, X string
		} `json:"keys"`
	}
	require.NoError(e.t, json.Unmarshal(e.do("GET", "/__ds/jwks.json", "").body, &jwks))
	for _, k := range jwks.Keys {
		if k.Kid != kid {
			continue
		}
		pub, err := base64.RawURLEncoding.DecodeString(k.X)
		require.NoError(e.t, err)
		raw, err := base64.RawURLEncoding.DecodeString(sig)
		require.NoError(e.t, err)
		require.True(e.t, ed25519.Verify(pub, append([]byte(ts+"."), h.raw...), raw), "signature over the body as sent")
		return
	}
	e.t.Fatalf("kid %q is not in the JWKS", kid)
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	}
	return ""
}

// streamEvent is a State Protocol event of /chat/a/main as served (offset stamped).
type streamEvent struct {
	Type    string            `json:"type"`
	Key     string            `json:"key"`
	Headers map[string]string `json:"headers"`
}

// eventsFrom reads /chat/a/main after offset.
func (e *env) eventsFrom(offset string) []streamEvent {
	e.t.Helper()
	r := e.do("GET", "/chat/a/main?offset="+offset, "")
	require.Equal(e.t, http.StatusOK, r.status, r.text())
	var evs []streamEvent
	require.NoError(e.t, json.Unmarshal(r.body, &evs))
	return evs
}
