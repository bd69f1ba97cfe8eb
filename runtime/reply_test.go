package runtime_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/runtime"
	"github.com/entityd/entityd/wake"
	"github.com/entityd/entityd/wire"
)

// replier answers messages by their payload: "one" with one text, "two" with two texts
// in one run, "quiet" with nothing, "empty" with an empty text (nothing), "bare" with a
// run and no text, "refuse" with a text in a run it ends as failed, and "crash" by
// failing every attempt.
func replier() runtime.EntityDefinition {
	return runtime.EntityDefinition{Type: "replier", Description: "replies by the book",
		StateSchemas: map[string]json.RawMessage{"note": json.RawMessage(`{"type":"object"}`)},
		Handler: func(ctx *runtime.Context) error {
			w, ok := ctx.Wake.(runtime.InboxWake)
			if !ok {
				return nil
			}
			var p string
			_ = json.Unmarshal(w.Payload, &p)
			switch p {
			case "one":
				return ctx.WriteText("hello")
			case "two":
				return errors.Join(ctx.WriteText("a"), ctx.WriteEvent("note", "n", "insert", map[string]any{}), ctx.WriteText("b"))
			case "empty":
				return ctx.WriteText("")
			case "bare":
				ctx.StartRun()
			case "refuse":
				if err := ctx.WriteText("let me see"); err != nil {
					return err
				}
				ctx.FailRun("cannot do that")
			case "crash":
				return errors.New("crashed on " + w.Key)
			}
			return nil
		}}
}

// expected is one event of a reply as it must appear on the stream.
type expected struct{ typ, key, op, value string }

// replyEvents is what a reply of texts in run key ending with status is, event by event.
func replyEvents(key string, texts []string, extra []expected, status string) []expected {
	out := []expected{{"run", key, "insert", `{"status":"started"}`}}
	for i, text := range texts {
		msg := key + ":msg"
		if i > 0 {
			msg += fmt.Sprintf("-%d", i)
		}
		out = append(out,
			expected{"text", msg, "insert", fmt.Sprintf(`{"status":"streaming","run_id":%q}`, key)},
			expected{"text_delta", msg + ":0", "insert", fmt.Sprintf(`{"text_id":%q,"run_id":%q,"delta":%q}`, msg, key, text)},
			expected{"text", msg, "update", fmt.Sprintf(`{"status":"completed","run_id":%q}`, key)})
	}
	out = append(out, extra...)
	reason := map[string]string{"completed": "stop", "failed": "error"}[status]
	return append(out, expected{"run", key, "update", fmt.Sprintf(`{"status":%q,"finish_reason":%q}`, status, reason)})
}

// requireEvents compares a stream segment with what it must be, event by event.
func requireEvents(t *testing.T, want []expected, got []event) {
	t.Helper()
	require.Len(t, got, len(want), "got %v", eventTypes(got))
	for i, w := range want {
		g := got[i]
		require.Equal(t, []string{w.typ, w.key, w.op}, []string{g.Type, g.Key, g.op()}, "event %d: %s", i, g.Raw)
		require.JSONEq(t, w.value, string(g.Value), "event %d", i)
		require.NotEmpty(t, g.Headers["timestamp"], "event %d", i)
	}
}

// A Go handler's reply is written as Electric's runtime writes one (a run, its texts and
// their deltas, linked by run_id and text_id, in order), which is what Electric's UI
// renders; every wake that replies gets a run of its own, keyed by the wake's stream
// position. The same holds when the handler runs outside the server.
func TestHandlerReplyIsARun(t *testing.T) {
	for _, mode := range []string{"server", "webhook", "runner"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			var e *env
			if mode == "server" {
				e = startServer(t, wake.Options{MaxAttempts: 2}, true, replier())
			} else {
				e = startServer(t, wake.Options{}, true)
				startRemote(t, e, mode, replier())
			}
			a := e.spawn("replier", "a", nil)
			keys := []string{"one", "two", "quiet", "empty", "bare", "refuse", "one-again"}
			for _, k := range keys {
				p := k
				if k == "one-again" {
					p = "one"
				}
				e.send(a, map[string]any{"key": k, "payload": p})
			}
			e.send(a, map[string]any{"key": "crash", "payload": "crash"})
			e.send(a, map[string]any{"key": "last", "payload": "one"})
			var events []event
			testwait.Until(t, "every reply", func() bool {
				events = e.events(a)
				return len(texts(t, events)) == 6
			}, 30*time.Second)

			// a message's run is run-<its seq> (entity streams hold one event per message,
			// numbered from 1); its events are the run's own and those linked to it, and
			// they sit together on the stream (one commit), around the handler's other
			// writes. Messages are all sent before the first reply, so a reply is found
			// by its links, not by where it is.
			runOf := func(key string) (string, []event) {
				i := slices.IndexFunc(events, func(ev event) bool { return ev.Type == "inbox" && ev.Key == key && ev.op() == "insert" })
				require.GreaterOrEqual(t, i, 0, key)
				run := wire.RunKey(int64(i + 1))
				first, last := -1, -1
				for j, ev := range events {
					var link struct {
						RunID string `json:"run_id"`
					}
					_ = json.Unmarshal(ev.Value, &link)
					if ev.Key == run || strings.HasPrefix(ev.Key, run+":") || link.RunID == run {
						if first < 0 {
							first = j
						}
						last = j
					}
				}
				if first < 0 {
					return run, nil
				}
				return run, events[first : last+1]
			}

			run1, seg := runOf("one")
			requireEvents(t, replyEvents(run1, []string{"hello"}, nil, "completed"), seg)
			run2, seg := runOf("two")
			requireEvents(t, replyEvents(run2, []string{"a", "b"},
				nil, "completed")[:4], seg[:4])
			require.Equal(t, "note", seg[4].Type, "the handler's other writes stay where it made them")
			requireEvents(t, replyEvents(run2, []string{"a", "b"}, nil, "completed")[4:], seg[5:])
			for _, k := range []string{"quiet", "empty"} {
				_, seg = runOf(k)
				require.Empty(t, seg, "%s: a wake that writes no reply writes no run", k)
			}
			run5, seg := runOf("bare")
			requireEvents(t, replyEvents(run5, nil, nil, "completed"), seg)
			run6, seg := runOf("refuse")
			requireEvents(t, replyEvents(run6, []string{"let me see"}, []expected{{"error", run6 + ":error", "insert",
				fmt.Sprintf(`{"error_code":"handler_error","message":"cannot do that","run_id":%q}`, run6)}}, "failed"), seg)
			run7, seg := runOf("one-again")
			requireEvents(t, replyEvents(run7, []string{"hello"}, nil, "completed"), seg)
			require.NotEqual(t, run1, run7, "a second wake gets a run of its own")

			// a unit given up on: its last attempt's error in a failed run
			run8, seg := runOf("crash")
			runs := ofType(seg, "run")
			require.Len(t, runs, 2)
			require.Equal(t, []string{run8, run8}, []string{runs[0].Key, runs[1].Key})
			requireFailedRun(t, seg, "crashed on crash")

			run9, seg := runOf("last")
			requireEvents(t, replyEvents(run9, []string{"hello"}, nil, "completed"), seg)
			order := []string{run1, run2, run5, run6, run7, run8, run9}
			require.True(t, slices.IsSortedFunc(order, func(x, y string) int {
				var a, b int
				fmt.Sscanf(x, "run-%d", &a)
				fmt.Sscanf(y, "run-%d", &b)
				return a - b
			}), "run numbers grow with the stream: %v", order)
			require.Len(t, ofType(events, "run"), 2*len(order), "no other runs")
		})
	}
}

// A parent that registered runFinished on a Go-handled child is woken once per finished
// run, with the reply's text (or, for a unit given up on, its error).
func TestGoHandlerRunsWakeRunFinishedObservers(t *testing.T) {
	t.Parallel()
	var (
		mu       sync.Mutex
		heard    []runtime.RegisteredWake
		parentOf = map[string]bool{}
	)
	parent := runtime.EntityDefinition{Type: "parent", Handler: func(ctx *runtime.Context) error {
		if w, ok := ctx.Wake.(runtime.RegisteredWake); ok {
			mu.Lock()
			heard = append(heard, w)
			parentOf[ctx.Entity.URL] = true
			mu.Unlock()
		}
		return nil
	}}
	e := startServer(t, wake.Options{MaxAttempts: 1}, true, parent, replier())
	p := e.spawn("parent", "p", nil)
	c := e.spawn("replier", "c", `{"parent":"`+p+`"}`)
	r := e.do(http.MethodPost, "/_electric/wake", map[string]any{"subscriberUrl": p, "sourceUrl": c, "condition": "runFinished"})
	require.Equal(t, http.StatusNoContent, r.Status, "%s", r.Body)

	e.send(c, map[string]any{"key": "k1", "payload": "two"})
	e.send(c, map[string]any{"key": "k2", "payload": "quiet"})
	e.send(c, map[string]any{"key": "k3", "payload": "crash"})
	e.send(c, map[string]any{"key": "k4", "payload": "refuse"})
	type finished struct {
		RunStatus string  `json:"run_status"`
		Response  *string `json:"response"`
		Error     *string `json:"error"`
	}
	var got []finished
	testwait.Until(t, "three finished runs", func() bool {
		got = nil
		for _, ev := range ofType(e.events(p), "wake") {
			var v struct {
				FinishedChild *finished `json:"finished_child"`
			}
			require.NoError(t, json.Unmarshal(ev.Value, &v), "%s", ev.Raw)
			require.NotNil(t, v.FinishedChild, "%s", ev.Raw)
			got = append(got, *v.FinishedChild)
		}
		return len(got) >= 3
	}, 30*time.Second)
	// nothing more comes: the fourth message is the last, and its wake is in
	e.send(c, map[string]any{"key": "k5", "payload": "one"})
	testwait.Until(t, "the last run", func() bool { return len(ofType(e.events(p), "wake")) >= 4 }, 30*time.Second)
	require.Len(t, ofType(e.events(p), "wake"), 4, "one wake per finished run, none for the quiet message")
	str := func(s *string) string {
		if s == nil {
			return "<nil>"
		}
		return *s
	}
	var summary []string
	for _, f := range got {
		summary = append(summary, f.RunStatus+" "+str(f.Response)+" "+str(f.Error))
	}
	require.Equal(t, []string{"completed ab <nil>", "failed <nil> crashed on k3", "failed let me see cannot do that"}, summary)

	// the parent's Go handler is woken by each of them, once, with the finished child
	testwait.Until(t, "the parent's handler ran for every wake event", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(heard) >= 4
	}, 10*time.Second)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, heard, 4)
	require.True(t, parentOf[p])
	first := heard[0]
	require.Equal(t, c, first.Source)
	require.False(t, first.Timeout)
	require.NotEmpty(t, first.Changes)
	require.NotNil(t, first.FinishedChild)
	require.Equal(t, runtime.FinishedChild{URL: c, Type: "replier", RunStatus: "completed", Response: "ab"}, *first.FinishedChild)
	require.Equal(t, "failed", heard[1].FinishedChild.RunStatus)
}

// The same through runtime.External: a Go parent served as a webhook handler is woken by
// its child's finished run.
func TestRemoteGoHandlerRunsOnRegisteredWake(t *testing.T) {
	t.Parallel()
	heard := make(chan runtime.RegisteredWake, 8)
	parent := runtime.EntityDefinition{Type: "parent", Handler: func(ctx *runtime.Context) error {
		if w, ok := ctx.Wake.(runtime.RegisteredWake); ok {
			heard <- w
		}
		return nil
	}}
	e := startServer(t, wake.Options{}, true)
	startRemote(t, e, "webhook", parent, replier())
	p := e.spawn("parent", "p", nil)
	c := e.spawn("replier", "c", `{"parent":"`+p+`"}`)
	r := e.do(http.MethodPost, "/_electric/wake", map[string]any{"subscriberUrl": p, "sourceUrl": c, "condition": "runFinished"})
	require.Equal(t, http.StatusNoContent, r.Status, "%s", r.Body)
	e.send(c, map[string]any{"key": "k1", "payload": "two"})
	select {
	case w := <-heard:
		require.Equal(t, c, w.Source)
		require.NotNil(t, w.FinishedChild)
		require.Equal(t, runtime.FinishedChild{URL: c, Type: "replier", RunStatus: "completed", Response: "ab"}, *w.FinishedChild)
	case <-time.After(20 * time.Second):
		t.Fatal("the remote parent was not woken by its child's finished run")
	}
}
