package runtime_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/runtime"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wake"
)

// startRemote serves defs outside the server (in this test process, over HTTP only) as
// a webhook handler or as the pull-wake runner "r1", dispatched to by their types.
// It returns the webhook's URL (webhook mode).
func startRemote(t *testing.T, e *env, mode string, defs ...runtime.EntityDefinition) string {
	t.Helper()
	r, err := runtime.NewExternal(runtime.ExternalOptions{Server: e.base, BaseBackoff: 10 * time.Millisecond,
		MaxBackoff: 40 * time.Millisecond, Log: zaptest.NewLogger(t, zaptest.Level(zap.ErrorLevel))}, defs...)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	switch mode {
	case "webhook":
		hs := httptest.NewServer(r.Webhook(ctx))
		t.Cleanup(hs.Close)
		require.NoError(t, r.RegisterTypes(ctx, runtime.Dispatch{WebhookURL: hs.URL + "/wake"}))
		return hs.URL + "/wake"
	case "runner":
		_, err := r.RegisterRunner(ctx, "r1")
		require.NoError(t, err)
		require.NoError(t, r.RegisterTypes(ctx, runtime.Dispatch{RunnerID: "r1"}))
		wg.Add(1)
		go func() { defer wg.Done(); _ = r.RunRunner(ctx, "r1") }()
	default:
		t.Fatalf("mode %q", mode)
	}
	return ""
}

// counter keeps a count in its state, answers each message with the count, registers
// a slash command on its first message and forwards "forward:<url>" messages.
func counter() runtime.EntityDefinition {
	return runtime.EntityDefinition{
		Type:         "counter",
		Description:  "counts its messages",
		StateSchemas: map[string]json.RawMessage{"count": json.RawMessage(`{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}`)},
		Handler: func(ctx *runtime.Context) error {
			switch w := ctx.Wake.(type) {
			case runtime.SpawnWake:
				return ctx.WriteText("spawned with " + string(w.Args))
			case runtime.InboxWake:
				var n struct{ N int }
				if _, err := ctx.State().Decode("count", "total", &n); err != nil {
					return err
				}
				n.N++
				if err := ctx.WriteEvent("count", "total", "upsert", map[string]int{"n": n.N}); err != nil {
					return err
				}
				var payload string
				_ = json.Unmarshal(w.Payload, &payload)
				if n.N == 1 {
					if err := ctx.SlashCommands.Register(runtime.SlashCommandRegistration{
						Definition: runtime.SlashCommand{Name: "tally"}, Owner: "counter"}); err != nil {
						return err
					}
				}
				if to, ok := strings.CutPrefix(payload, "forward:"); ok {
					if err := ctx.Send(to, runtime.Message{Payload: "from " + ctx.Entity.URL}); err != nil {
						return err
					}
				}
				return ctx.WriteText(fmt.Sprintf("%d: %s (from_agent %q)", n.N, payload, w.FromAgent))
			}
			return nil
		},
	}
}

// TestRemoteRunsTheSameHandler serves one definition outside the server, as a webhook
// and as a runner: every message is handled once, in order, with the state of the runs
// before it; slash-command changes and sends to other entities are committed too.
func TestRemoteRunsTheSameHandler(t *testing.T) {
	for _, mode := range []string{"webhook", "runner"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := startServer(t, wake.Options{}, false)
			startRemote(t, e, mode, counter())
			a := e.spawn("counter", "a", `{"args":{"hello":1}}`)
			b := e.spawn("counter", "b", nil)
			const n = 30
			for i := range n {
				e.send(a, map[string]any{"payload": fmt.Sprintf("m%d", i)})
			}
			e.send(a, map[string]any{"payload": "forward:" + b})
			var got []string
			testwait.Until(t, "texts of a", func() bool {
				got = texts(t, e.events(a))
				return len(got) >= n+2
			}, 30*time.Second)
			want := []string{`spawned with {"hello":1}`}
			for i := range n {
				want = append(want, fmt.Sprintf("%d: m%d (from_agent \"\")", i+1, i))
			}
			want = append(want, fmt.Sprintf("%d: forward:%s (from_agent \"\")", n+1, b))
			require.Equal(t, want, got, "each message once, in order, each run seeing the state before it")

			testwait.Until(t, "b answers a's message", func() bool { return len(texts(t, e.events(b))) == 2 }, 30*time.Second)
			require.Equal(t, []string{"spawned with {}", `1: from /counter/a (from_agent "/counter/a")`}, texts(t, e.events(b)))

			r := e.do(http.MethodGet, entitiesPath+a+"/slash-commands", nil)
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
			require.Contains(t, string(r.Body), `"name":"tally"`)

			// Nothing more is run: a settles once its own writes are acknowledged.
			require.Len(t, ofType(e.events(a), "error"), 0)
			e.send(a, map[string]any{"payload": "last"})
			testwait.Until(t, "the last message", func() bool { return len(texts(t, e.events(a))) == n+3 }, 30*time.Second)
			require.Equal(t, fmt.Sprintf("%d: last (from_agent \"\")", n+2), texts(t, e.events(a))[n+2])
		})
	}
}

// TestRemoteRetriesAndGivesUp: a failing run is retried with backoff and nothing it
// wrote is kept; a run that keeps failing is given up on after MaxAttempts with the
// same error events and failed mark as in the server, and the next message goes on.
func TestRemoteRetriesAndGivesUp(t *testing.T) {
	t.Parallel()
	e := startServer(t, wake.Options{}, false)
	var mu sync.Mutex
	attempts := map[string]int{}
	def := runtime.EntityDefinition{Type: "flaky", Description: "fails on purpose",
		Handler: func(ctx *runtime.Context) error {
			w, ok := ctx.Wake.(runtime.InboxWake)
			if !ok {
				return nil
			}
			var p string
			_ = json.Unmarshal(w.Payload, &p)
			mu.Lock()
			attempts[p]++
			mu.Unlock()
			_ = ctx.WriteText("partial " + p) // never kept when the run fails
			switch {
			case p == "poison":
				return fmt.Errorf("poison always fails")
			case p == "flaky" && ctx.Attempt < 3:
				panic("flaky fails twice")
			}
			return ctx.WriteText(fmt.Sprintf("handled %s on attempt %d", p, ctx.Attempt))
		}}
	startRemote(t, e, "webhook", def)
	a := e.spawn("flaky", "a", nil)
	for _, p := range []string{"flaky", "poison", "ok"} {
		e.send(a, map[string]any{"payload": p, "key": p})
	}
	testwait.Until(t, "texts", func() bool { return len(ofType(e.events(a), "text_delta")) >= 4 }, 30*time.Second)
	events := e.events(a)
	require.Equal(t, []string{"partial flaky", "handled flaky on attempt 3", "partial ok", "handled ok on attempt 1"}, texts(t, events))
	errs := ofType(events, "error")
	require.Len(t, errs, 2+5, "two failed attempts of flaky, five of poison")
	var lastWillRetry bool
	errs[len(errs)-1].field(t, "will_retry", &lastWillRetry)
	require.False(t, lastWillRetry)
	require.Contains(t, errs[0].str(t, "message"), "flaky fails twice")
	var failed bool
	for _, ev := range ofType(events, "inbox") {
		if ev.Key == "poison" && ev.op() == "update" {
			require.Equal(t, "failed", ev.str(t, "status"))
			failed = true
		}
	}
	require.True(t, failed, "the poison message is marked failed")
	// the give-up: a failed run around the last error and the failure mark, together
	last := errs[len(errs)-1]
	run := last.str(t, "run_id")
	first := slices.IndexFunc(events, func(ev event) bool { return ev.Type == "run" && ev.Key == run })
	end := first + slices.IndexFunc(events[first+1:], func(ev event) bool { return ev.Type == "run" && ev.Key == run }) + 2
	requireFailedRun(t, events[first:end], "poison always fails")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, map[string]int{"flaky": 3, "poison": 5, "ok": 1}, attempts)
}

// TestRemoteRefusedWritesAreRecorded: writes the server refuses when the wake commits (a
// send its target's schema rejects) are dropped with an error event on the entity, the
// message is acknowledged, and the next one is handled.
func TestRemoteRefusedWritesAreRecorded(t *testing.T) {
	t.Parallel()
	e := startServer(t, wake.Options{}, false)
	strict := runtime.EntityDefinition{Type: "strict", Description: "takes orders with an id",
		InboxSchemas: map[string]json.RawMessage{"order": json.RawMessage(`{"type":"object","required":["id"]}`)},
		Handler:      func(*runtime.Context) error { return nil }}
	sender := runtime.EntityDefinition{Type: "sender", Description: "forwards orders",
		Handler: func(ctx *runtime.Context) error {
			w, ok := ctx.Wake.(runtime.InboxWake)
			if !ok {
				return nil
			}
			var p string
			_ = json.Unmarshal(w.Payload, &p)
			if p == "bad order" {
				if err := ctx.Send("/strict/s", runtime.Message{Type: "order", Payload: map[string]any{}}); err != nil {
					return err
				}
			}
			return ctx.WriteText("sent " + p)
		}}
	startRemote(t, e, "webhook", strict, sender)
	e.spawn("strict", "s", nil)
	a := e.spawn("sender", "a", nil)
	e.send(a, map[string]any{"payload": "bad order"})
	testwait.Until(t, "the refusal is recorded", func() bool { return len(ofType(e.events(a), "error")) == 1 }, 30*time.Second)
	e.send(a, map[string]any{"payload": "next"})
	testwait.Until(t, "the next message", func() bool { return len(texts(t, e.events(a))) == 1 }, 30*time.Second)
	events := e.events(a)
	require.Equal(t, []string{"sent next"}, texts(t, events), "nothing of the refused run is kept")
	errEv := ofType(events, "error")[0]
	require.Equal(t, "commit", errEv.str(t, "wake"))
	require.Contains(t, errEv.str(t, "message"), "INVALID_EFFECTS")
	require.Empty(t, inboxOrder(e.events("/strict/s")), "the order was not delivered")
}

// TestRemoteWebhookRefusesForgedWakes: only wakes signed by the server are handled; a
// forged one (another key, or no signature) is refused with 401 and runs nothing.
func TestRemoteWebhookRefusesForgedWakes(t *testing.T) {
	t.Parallel()
	e := startServer(t, wake.Options{}, false)
	var runs atomic.Int64
	hook := startRemote(t, e, "webhook", runtime.EntityDefinition{Type: "guarded", Description: "d",
		Handler: func(*runtime.Context) error { runs.Add(1); return nil }})
	body := []byte(`{"wakeId":"w_forged","epoch":1,"callback":"` + e.base + `/_electric/wake-callbacks/w_forged","claimToken":"x",` +
		`"streams":[{"path":"guarded/a/main","offset":"0000000000000001_0000000000000100","acked_offset":"-1"}]}`)
	_, forger, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	forged := "t=" + ts + ",kid=ds_forged,ed25519=" + base64.RawURLEncoding.EncodeToString(ed25519.Sign(forger, append([]byte(ts+"."), body...)))
	var jwks struct{ Keys []struct{ Kid string } }
	require.NoError(t, json.Unmarshal(e.do(http.MethodGet, "/__ds/jwks.json", nil).Body, &jwks))
	realKid := "t=" + ts + ",kid=" + jwks.Keys[0].Kid + ",ed25519=" + base64.RawURLEncoding.EncodeToString(ed25519.Sign(forger, append([]byte(ts+"."), body...)))
	for name, sig := range map[string]string{"no signature": "", "unknown key": forged, "the server's kid, another key": realKid} {
		req, err := http.NewRequest(http.MethodPost, hook, bytes.NewReader(body))
		require.NoError(t, err)
		if sig != "" {
			req.Header.Set("Webhook-Signature", sig)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusUnauthorized, res.StatusCode, name)
	}
	require.Zero(t, runs.Load())
}

// TestRemoteWebhookBoundsWakesInProgress: beyond MaxWakes wakes at once the webhook
// answers 503; the server delivers that wake again later, and it is handled once.
func TestRemoteWebhookBoundsWakesInProgress(t *testing.T) {
	t.Parallel()
	e := startServer(t, wake.Options{}, false)
	aStarted, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	handled := map[string]int{}
	def := runtime.EntityDefinition{Type: "slow", Description: "d", Handler: func(ctx *runtime.Context) error {
		if _, ok := ctx.Wake.(runtime.InboxWake); !ok {
			return nil
		}
		if ctx.Entity.URL == "/slow/a" {
			close(aStarted)
			<-release
		}
		mu.Lock()
		handled[ctx.Entity.URL]++
		mu.Unlock()
		return nil
	}}
	r, err := runtime.NewExternal(runtime.ExternalOptions{Server: e.base, MaxWakes: 1,
		Log: zaptest.NewLogger(t, zaptest.Level(zap.ErrorLevel))}, def)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	hs := httptest.NewServer(r.Webhook(ctx))
	t.Cleanup(hs.Close)
	// one subscription per entity, so that both can be woken at once
	require.NoError(t, r.RegisterTypes(ctx, runtime.Dispatch{WebhookURL: hs.URL, SubscriptionID: "slow"}))
	e.spawn("slow", "a", nil)
	e.spawn("slow", "b", nil)
	e.send("/slow/a", map[string]any{"payload": 1})
	<-aStarted
	e.send("/slow/b", map[string]any{"payload": 2})
	sum := sha256.Sum256([]byte("/slow/b"))
	subB := "/__ds/subscriptions/slow:" + hex.EncodeToString(sum[:])[:16]
	testwait.Until(t, "b's wake is answered 503 while a's is in progress", func() bool {
		var sub map[string]any
		_ = json.Unmarshal(e.do(http.MethodGet, subB, nil).Body, &sub)
		return sub["status"] == "failed"
	}, 30*time.Second)
	mu.Lock()
	require.Zero(t, handled["/slow/b"])
	mu.Unlock()
	close(release)
	testwait.Until(t, "b is delivered again and handled once a's wake ended", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return handled["/slow/a"] == 1 && handled["/slow/b"] == 1
	}, 30*time.Second)
}

// TestRemoteCommitsABacklogInParts: a wake with a large backlog is committed in parts at
// read boundaries (here reads of 2 KiB, and a commit every 10 events), each part with its
// acknowledgement; every message is answered once, in order.
func TestRemoteCommitsABacklogInParts(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, testserver.Options{QuietLogs: true, Streams: streamdb.Options{MaxReadBytes: 2048}})
	e := &env{t: t, base: srv.URL}
	release := make(chan struct{})
	var once sync.Once
	var commits atomic.Int64
	def := runtime.EntityDefinition{Type: "chatty", Description: "d", Handler: func(ctx *runtime.Context) error {
		w, ok := ctx.Wake.(runtime.InboxWake)
		if !ok {
			return nil
		}
		once.Do(func() { <-release }) // the first message holds the wake while the backlog grows
		for i := range 3 {
			if err := ctx.WriteText(fmt.Sprintf("%s.%d", w.Payload, i)); err != nil {
				return err
			}
		}
		return nil
	}}
	r, err := runtime.NewExternal(runtime.ExternalOptions{Server: e.base, CommitEvery: 10,
		OnCommitted: func(string) { commits.Add(1) }, Log: zaptest.NewLogger(t, zaptest.Level(zap.ErrorLevel))}, def)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	hs := httptest.NewServer(r.Webhook(ctx))
	t.Cleanup(hs.Close)
	require.NoError(t, r.RegisterTypes(ctx, runtime.Dispatch{WebhookURL: hs.URL, SubscriptionID: "chatty"}))
	a := e.spawn("chatty", "a", nil)
	const n = 40
	for i := range n {
		e.send(a, map[string]any{"payload": i})
	}
	close(release)
	var want []string
	for i := range n {
		for j := range 3 {
			want = append(want, fmt.Sprintf("%d.%d", i, j))
		}
	}
	testwait.Until(t, "every message answered", func() bool { return len(texts(t, e.events(a))) >= len(want) }, 60*time.Second)
	require.Equal(t, want, texts(t, e.events(a)), "once each, in order")
	require.Greater(t, commits.Load(), int64(3), "the backlog was committed in parts")
}
