package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/runtime"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wake"
	"github.com/entityd/entityd/wire"
)

var offsetRe = regexp.MustCompile(`^\d{16}_\d{16}$`)

const devPrincipal = "/principal/system%3Adev-local"

// TestWakeVariants drives every variant of the closed Wake union through a real server
// and checks what the handler is given.
func TestWakeVariants(t *testing.T) {
	rec := &recorder{}
	var timerMu sync.Mutex
	timerIDs := map[string]time.Time{} // timer id -> when it is due
	watcher := runtime.EntityDefinition{
		Type:        "watcher",
		Description: "records its wakes; schedules and observes on request",
		Handler: func(ctx *runtime.Context) error {
			rec.add(ctx)
			msg, ok := ctx.Wake.(runtime.InboxWake)
			if !ok {
				return nil
			}
			switch msg.Type {
			case "schedule":
				due := time.Now().Add(100 * time.Millisecond)
				id, err := ctx.Schedule(due, json.RawMessage(`{"n":7,"why":"later"}`))
				if err != nil {
					return err
				}
				timerMu.Lock()
				timerIDs[id] = due
				timerMu.Unlock()
			case "observe":
				var p struct {
					URL string `json:"url"`
				}
				if err := json.Unmarshal(msg.Payload, &p); err != nil {
					return err
				}
				return ctx.Observe(p.URL)
			}
			return nil
		},
	}
	source := runtime.EntityDefinition{
		Type:        "source",
		Description: "writes a text for every message",
		Handler: func(ctx *runtime.Context) error {
			rec.add(ctx)
			if msg, ok := ctx.Wake.(runtime.InboxWake); ok {
				return ctx.WriteText("source got " + msg.Key)
			}
			return nil
		},
	}
	e := startServer(t, wake.Options{}, false, watcher, source)

	// spawn: SpawnWake with the args as given
	a := e.spawn("watcher", "a", `{"args":{"topic":"x","n":1,"nested":{"k":[1,2]}}}`)
	s := rec.wait(t, a, 10*time.Second, func(s seen) bool { return s.Wake.Kind() == "spawn" })
	sw, ok := s.Wake.(runtime.SpawnWake)
	require.True(t, ok, "%T", s.Wake)
	jsonEq(t, `{"topic":"x","n":1,"nested":{"k":[1,2]}}`, sw.Args)
	require.Empty(t, sw.Parent)
	require.Equal(t, 1, s.Attempt)

	// composer_input: the payload byte for byte, the sender, the mode and the offset
	payload := `{ "source" : "/deploy  now",` + "\n" + `  "nodes":[{"kind":"slash_command","start":0,"end":7,"raw":"/deploy","name":"deploy","extra":42}] }`
	e.send(a, `{"type":"composer_input","key":"ci-1","payload":`+payload+`}`)
	s = rec.waitKey(t, a, "ci-1", 10*time.Second)
	iw := s.Wake.(runtime.InboxWake)
	require.Equal(t, "composer_input", iw.Type)
	require.Equal(t, payload, string(iw.Payload), "the payload reaches the handler byte for byte")
	require.Equal(t, devPrincipal, iw.From)
	require.Empty(t, iw.FromAgent)
	require.Equal(t, "immediate", iw.Mode)
	require.WithinDuration(t, time.Now(), iw.Timestamp, time.Minute)
	require.Regexp(t, offsetRe, iw.Offset)
	all := e.events(a)
	inboxEv := ofType(all, "inbox")[0]
	require.Equal(t, "ci-1", inboxEv.Key)
	require.Equal(t, inboxEv.str(t, "from"), iw.From)
	jsonEq(t, string(inboxEv.Value), iw.Value, "Value is the inbox row as stored")
	// the offset is the one right after the message: reading from it yields what follows
	fromOffset := readStream(t, e.base, a, iw.Offset).Events
	require.Equal(t, eventTypes(after(t, all, "inbox", "ci-1")), eventTypes(fromOffset))
	ci, ok := iw.ComposerInput()
	require.True(t, ok)
	require.Equal(t, "/deploy  now", ci.Source)
	cmd, ok := ci.FirstSlashCommand()
	require.True(t, ok)
	require.Equal(t, "deploy", cmd.Name)
	require.Equal(t, "  now", ci.TextAfterNode(cmd))
	require.JSONEq(t, "42", string(cmd.Fields["extra"]))

	// a typed, queued message
	e.send(a, map[string]any{"type": "greeting", "key": "typed-1", "mode": "queued", "payload": map[string]any{"hello": "world"}})
	s = rec.waitKey(t, a, "typed-1", 10*time.Second)
	iw = s.Wake.(runtime.InboxWake)
	require.Equal(t, "greeting", iw.Type)
	require.Equal(t, "queued", iw.Mode)
	require.NotEmpty(t, iw.Position)
	jsonEq(t, `{"hello":"world"}`, iw.Payload)
	_, ok = iw.ComposerInput()
	require.False(t, ok, "a greeting is not a composer_input")

	// a timer: ScheduleWake with the payload, not before it is due
	e.send(a, map[string]any{"type": "schedule", "key": "sched-1", "payload": map[string]any{}})
	s = rec.wait(t, a, 10*time.Second, func(s seen) bool { return s.Wake.Kind() == "schedule" })
	sch := s.Wake.(runtime.ScheduleWake)
	timerMu.Lock()
	due, ok := timerIDs[sch.ID]
	timerMu.Unlock()
	require.True(t, ok, "the wake names the timer ctx.Schedule returned (%q)", sch.ID)
	jsonEq(t, `{"n":7,"why":"later"}`, sch.Payload)
	require.WithinDuration(t, due, sch.DueAt, time.Millisecond, "DueAt is the time asked for")
	require.False(t, s.At.Before(sch.DueAt), "the timer fired at %v, before it was due at %v", s.At, sch.DueAt)
	testwait.Until(t, "a fired timer is deleted", func() bool {
		return e.queryInt(`SELECT count(*) FROM wake_timers WHERE entity_url = $1`, a) == 0
	}, 5*time.Second)

	// observation: A observes B; B's handler writes a text; then B is killed
	b := e.spawn("source", "b", nil)
	sb := rec.wait(t, b, 10*time.Second, func(s seen) bool { return s.Wake.Kind() == "spawn" })
	jsonEq(t, `{}`, sb.Wake.(runtime.SpawnWake).Args, "a spawn without args gets {}")
	e.send(a, map[string]any{"type": "observe", "key": "obs-1", "payload": map[string]any{"url": b}})
	testwait.Until(t, "the observation commits with the wake", func() bool {
		return e.queryInt(`SELECT count(*) FROM wake_observations WHERE observer_url = $1 AND source_url = $2`, a, b) == 1
	}, 10*time.Second)
	e.send(b, map[string]any{"key": "to-b", "payload": "hi"})
	// B's reply is a run (see reply.go): the first event A observes opens it, and the
	// text arrives as the run's text_delta
	s = rec.wait(t, a, 10*time.Second, func(s seen) bool { return s.Wake.Kind() == "observation" })
	ob := s.Wake.(runtime.ObservationWake)
	require.Equal(t, b, ob.Source)
	require.NotNil(t, ob.Event)
	require.Equal(t, "run", ob.Event.Type)
	require.Equal(t, "insert", ob.Event.Operation)
	runKey := ob.Event.Key
	require.Regexp(t, `^run-[0-9]+$`, runKey)
	s = rec.wait(t, a, 10*time.Second, func(s seen) bool {
		o, ok := s.Wake.(runtime.ObservationWake)
		return ok && o.Event != nil && o.Event.Type == "text_delta"
	})
	ob = s.Wake.(runtime.ObservationWake)
	require.Equal(t, runKey+":msg:0", ob.Event.Key)
	var tv struct {
		Delta string `json:"delta"`
		RunID string `json:"run_id"`
	}
	require.NoError(t, json.Unmarshal(ob.Event.Value, &tv))
	require.Equal(t, "source got to-b", tv.Delta)
	require.Equal(t, runKey, tv.RunID)
	require.Empty(t, ob.Lifecycle)

	e.kill(b)
	s = rec.wait(t, a, 10*time.Second, func(s seen) bool {
		o, ok := s.Wake.(runtime.ObservationWake)
		return ok && o.Lifecycle != ""
	})
	ob = s.Wake.(runtime.ObservationWake)
	require.Equal(t, b, ob.Source)
	require.Equal(t, "killed", ob.Lifecycle)
	require.Nil(t, ob.Event)

	// signals
	e.signal(a, map[string]any{"signal": "SIGINT", "reason": "because", "payload": map[string]any{"p": 1}})
	s = rec.wait(t, a, 10*time.Second, func(s seen) bool {
		sig, ok := s.Wake.(runtime.SignalWake)
		return ok && sig.Signal == "SIGINT"
	})
	sig := s.Wake.(runtime.SignalWake)
	require.Equal(t, "because", sig.Reason)
	jsonEq(t, `{"p":1}`, sig.Payload)

	e.signal(a, map[string]any{"signal": "SIGUSR"})
	rec.wait(t, a, 10*time.Second, func(s seen) bool {
		sig, ok := s.Wake.(runtime.SignalWake)
		return ok && sig.Signal == "SIGUSR"
	})

	e.signal(a, map[string]any{"signal": "SIGTERM", "reason": "done"})
	rec.wait(t, a, 10*time.Second, func(s seen) bool {
		sig, ok := s.Wake.(runtime.SignalWake)
		return ok && sig.Signal == "SIGTERM"
	})
	testwait.Until(t, fmt.Sprintf("after its SIGTERM wake the entity stops (status %s)", e.status(a)), func() bool { return e.status(a) == "stopped" }, 10*time.Second)
	read := readStream(t, e.base, a, "-1")
	require.True(t, read.Closed, "the stream of a stopped entity is closed")
	require.Equal(t, "entity_stopped", read.Events[len(read.Events)-1].Type)

	// every unit of work once, in stream order
	require.Equal(t, []string{"spawn", "inbox:ci-1", "inbox:typed-1", "inbox:sched-1", "schedule", "inbox:obs-1",
		"observation:run", "observation:text", "observation:text_delta", "observation:text", "observation:run",
		"observation:killed", "signal:SIGINT", "signal:SIGUSR", "signal:SIGTERM"}, kinds(rec.of(a)))
	require.Equal(t, []string{"spawn", "inbox:to-b"}, kinds(rec.of(b)), "SIGKILL wakes nobody")
}

// TestSIGTERMToAnIdleEntityStopsIt: an entity that was released before SIGTERM arrived
// (its worker was gone) also stops after its SIGTERM wake.
func TestSIGTERMToAnIdleEntityStopsIt(t *testing.T) {
	rec := &recorder{}
	def := runtime.EntityDefinition{Type: "terminable", Handler: func(ctx *runtime.Context) error { rec.add(ctx); return nil }}
	e := startServer(t, wake.Options{IdleRelease: 50 * time.Millisecond}, false, def)
	a := e.spawn("terminable", "a", nil)
	rec.wait(t, a, 10*time.Second, func(s seen) bool { return s.Wake.Kind() == "spawn" })
	testwait.Until(t, "the idle entity is released", func() bool { return e.wakeStatus(a).Holder == nil }, 10*time.Second)
	e.signal(a, map[string]any{"signal": "SIGTERM"})
	testwait.Until(t, fmt.Sprintf("status %s", e.status(a)), func() bool { return e.status(a) == "stopped" }, 10*time.Second)
	require.Equal(t, []string{"spawn", "signal:SIGTERM"}, kinds(rec.of(a)))
}

// TestConcurrentSendsDeliveredOnceInStreamOrder: 200 messages sent at once from 16
// goroutines reach the handler once each, in the order of the stream, one at a time.
func TestConcurrentSendsDeliveredOnceInStreamOrder(t *testing.T) {
	var running, overlaps atomic.Int32
	var mu sync.Mutex
	var keys []string
	def := runtime.EntityDefinition{
		Type: "ordered",
		Handler: func(ctx *runtime.Context) error {
			if running.Add(1) > 1 {
				overlaps.Add(1)
			}
			defer running.Add(-1)
			if msg, ok := ctx.Wake.(runtime.InboxWake); ok {
				mu.Lock()
				keys = append(keys, msg.Key)
				n := len(keys)
				mu.Unlock()
				if n%7 == 0 {
					time.Sleep(2 * time.Millisecond) // let sends pile up behind a slow run
				}
				return ctx.WriteText("ack " + msg.Key)
			}
			return nil
		},
	}
	e := startServer(t, wake.Options{}, false, def)
	url := e.spawn("ordered", "o", nil)
	const total, senders = 200, 16
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				send(t, e.base, url, map[string]any{"key": fmt.Sprintf("m-%03d", i), "payload": map[string]any{"i": i}})
			}
		}()
	}
	for i := range total {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	delivered := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(keys)
	}
	testwait.Until(t, fmt.Sprintf("delivered %d of %d", len(delivered()), total), func() bool { return len(delivered()) >= total }, 60*time.Second)
	testwait.Until(t, "the acknowledgements commit", func() bool {
		// the last message (events are numbered from 1) is acknowledged
		evs := e.events(url)
		last := 0
		for i, ev := range evs {
			if ev.Type == "inbox" {
				last = i + 1
			}
		}
		return e.wakeStatus(url).ScannedSeq >= int64(last)
	}, 30*time.Second)
	// A duplicate (a redelivery of something already handled) would come before a message
	// sent now: delivery is in stream order.
	send(t, e.base, url, map[string]any{"key": "marker", "payload": map[string]any{"i": -1}})
	testwait.Until(t, "the marker is delivered", func() bool { return slices.Contains(delivered(), "marker") }, 30*time.Second)

	got := delivered()
	require.Equal(t, "marker", got[len(got)-1])
	got = got[:len(got)-1]
	require.Len(t, got, total, "each message once")
	want := inboxOrder(e.events(url))
	require.Equal(t, "marker", want[len(want)-1])
	want = want[:len(want)-1]
	require.Len(t, want, total)
	require.Equal(t, want, got, "the handler sees the messages in stream order")
	sorted := slices.Clone(got)
	sort.Strings(sorted)
	require.Len(t, slices.Compact(sorted), total, "no message twice")
	require.Zero(t, overlaps.Load(), "handler runs of one entity never overlap")
	testwait.Until(t, "every reply is stored", func() bool { return len(texts(t, e.events(url))) == total+1 }, 10*time.Second)
	acks := texts(t, e.events(url))
	for i, k := range want {
		require.Equal(t, "ack "+k, acks[i], "the writes follow the same order")
	}
}

// TestPausedMessagesWaitForRelease: a paused message is held until an inbox update
// (PATCH .../inbox/:key) releases it (then it is delivered with the merged value); a
// cancelled or deleted one never is.
func TestPausedMessagesWaitForRelease(t *testing.T) {
	rec := &recorder{}
	def := runtime.EntityDefinition{Type: "pausable", Handler: func(ctx *runtime.Context) error { rec.add(ctx); return nil }}
	e := startServer(t, wake.Options{}, false, def)
	url := e.spawn("pausable", "p", nil)
	e.send(url, map[string]any{"key": "p1", "mode": "paused", "payload": map[string]any{"v": 1}})
	e.send(url, map[string]any{"key": "p2", "mode": "paused", "payload": map[string]any{"v": 2}})
	e.send(url, map[string]any{"key": "after-1", "payload": "go"})
	rec.waitKey(t, url, "after-1", 10*time.Second)
	require.Equal(t, []string{"after-1"}, rec.inboxKeys(url), "paused messages are held")
	testwait.Until(t, "the held messages are recorded", func() bool { return e.wakeStatus(url).Paused == 2 }, 5*time.Second)

	// release p1 with a PATCH that also edits its payload
	update := func(key, value string) {
		r := e.do(http.MethodPatch, entitiesPath+url+"/inbox/"+key, value)
		require.Equal(t, http.StatusOK, r.Status, "PATCH %s: %s", key, r.Body)
	}
	update("p1", `{"mode":"queued","payload":{"v":10}}`)
	s := rec.waitKey(t, url, "p1", 10*time.Second)
	iw := s.Wake.(runtime.InboxWake)
	require.Equal(t, "queued", iw.Mode)
	jsonEq(t, `{"v":10}`, iw.Payload, "the released message carries the merged payload")
	var v map[string]any
	require.NoError(t, json.Unmarshal(iw.Value, &v))
	require.Equal(t, "pending", v["status"], "the rest of the row is kept: %s", iw.Value)
	require.Equal(t, devPrincipal, v["from"])
	require.Equal(t, devPrincipal, iw.From)
	all := e.events(url)
	released := slices.IndexFunc(all, func(ev event) bool { return ev.op() == "update" && ev.Key == "p1" })
	require.GreaterOrEqual(t, released, 0)
	// a released message's offset is that of the update that released it: after it
	// comes only the processed mark its run writes (it was queued, so pending)
	var after []event
	testwait.Until(t, "the run's acknowledgement", func() bool {
		after = readStream(t, e.base, url, iw.Offset).Events
		return len(after) > 0
	}, 10*time.Second)
	require.Len(t, after, 1, "%v", after)
	require.Equal(t, "p1", after[0].Key)
	require.Equal(t, "update", after[0].op())
	var mark map[string]any
	require.NoError(t, json.Unmarshal(after[0].Value, &mark))
	require.Equal(t, "processed", mark["status"])

	// cancel p2: it is dropped
	update("p2", `{"status":"cancelled"}`)
	e.send(url, map[string]any{"key": "after-2", "payload": "go"})
	rec.waitKey(t, url, "after-2", 10*time.Second) // p2 would have come before it
	require.Equal(t, []string{"after-1", "p1", "after-2"}, rec.inboxKeys(url))
	testwait.Until(t, "no message is held any more", func() bool { return e.wakeStatus(url).Paused == 0 }, 5*time.Second)

	// a held message that was deleted is dropped as well
	e.send(url, map[string]any{"key": "p3", "mode": "paused", "payload": 3})
	r := e.do(http.MethodDelete, entitiesPath+url+"/inbox/p3", nil)
	require.Equal(t, http.StatusOK, r.Status, "DELETE p3: %s", r.Body)
	e.send(url, map[string]any{"key": "after-3", "payload": "go"})
	rec.waitKey(t, url, "after-3", 10*time.Second) // p3 would have come before it
	require.Equal(t, []string{"after-1", "p1", "after-2", "after-3"}, rec.inboxKeys(url))
	testwait.Until(t, "no message is held", func() bool { return e.wakeStatus(url).Paused == 0 }, 5*time.Second)
}

// TestSteerReachesRunningHandler: a steer message sent while the handler runs arrives on
// ctx.Steering() and is not delivered again as a wake of its own.
func TestSteerReachesRunningHandler(t *testing.T) {
	rec := &recorder{}
	started := make(chan struct{})
	var steered []runtime.InboxWake
	var mu sync.Mutex
	def := runtime.EntityDefinition{Type: "steerable", Handler: func(ctx *runtime.Context) error {
		rec.add(ctx)
		msg, ok := ctx.Wake.(runtime.InboxWake)
		if !ok || msg.Key != "slow" {
			return nil
		}
		close(started)
		select {
		case s := <-ctx.Steering():
			mu.Lock()
			steered = append(steered, s)
			mu.Unlock()
			return ctx.WriteText("steered by " + s.Key)
		case <-time.After(10 * time.Second):
			return ctx.WriteText("never steered")
		}
	}}
	e := startServer(t, wake.Options{}, false, def)
	url := e.spawn("steerable", "s", nil)
	e.send(url, map[string]any{"key": "slow", "payload": "work"})
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow run did not start")
	}
	e.send(url, map[string]any{"key": "s1", "mode": "steer", "payload": map[string]any{"nudge": true}})
	testwait.Until(t, "the steered reply is stored", func() bool { return slices.Contains(texts(t, e.events(url)), "steered by s1") }, 10*time.Second)
	mu.Lock()
	require.Len(t, steered, 1)
	require.Equal(t, "s1", steered[0].Key)
	require.Equal(t, "steer", steered[0].Mode)
	jsonEq(t, `{"nudge":true}`, steered[0].Payload)
	mu.Unlock()

	e.send(url, map[string]any{"key": "after", "payload": "next"})
	rec.waitKey(t, url, "after", 10*time.Second) // a second delivery of "steer" would come before it
	require.Equal(t, []string{"slow", "after"}, rec.inboxKeys(url), "the steer message is not delivered again")

	// a steer message sent while no handler runs is a wake of its own
	e.send(url, map[string]any{"key": "s2", "mode": "steer", "payload": "alone"})
	s := rec.waitKey(t, url, "s2", 10*time.Second)
	require.Equal(t, "steer", s.Wake.(runtime.InboxWake).Mode)
}

// TestSteerMessageOfFailedRunIsNotLost: a run that received a steer message and then
// failed wrote nothing, so the steer message must reach a later run (the retry, through
// ctx.Steering(), or a wake of its own).
func TestSteerMessageOfFailedRunIsNotLost(t *testing.T) {
	rec := &recorder{}
	started := make(chan struct{}, 10)
	var mu sync.Mutex
	var committedSteer []string // steer keys received by runs that succeeded
	def := runtime.EntityDefinition{Type: "steerfail", Handler: func(ctx *runtime.Context) error {
		rec.add(ctx)
		msg, ok := ctx.Wake.(runtime.InboxWake)
		if !ok {
			return nil
		}
		if msg.Key != "slow" {
			if msg.Mode == "steer" {
				mu.Lock()
				committedSteer = append(committedSteer, msg.Key)
				mu.Unlock()
			}
			return nil
		}
		started <- struct{}{}
		if ctx.Attempt == 1 {
			select {
			case <-ctx.Steering():
				return errors.New("failed after reading the steer message")
			case <-time.After(10 * time.Second):
				return errors.New("no steer message")
			}
		}
		select {
		case s := <-ctx.Steering():
			mu.Lock()
			committedSteer = append(committedSteer, s.Key)
			mu.Unlock()
		case <-time.After(2 * time.Second):
		}
		return nil
	}}
	e := startServer(t, wake.Options{MaxAttempts: 3}, true, def)
	url := e.spawn("steerfail", "s", nil)
	e.send(url, map[string]any{"key": "slow", "payload": "work"})
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow run did not start")
	}
	e.send(url, map[string]any{"key": "s1", "mode": "steer", "payload": "turn left"})
	e.send(url, map[string]any{"key": "after", "payload": "next"})
	rec.waitKey(t, url, "after", 20*time.Second)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"s1"}, committedSteer, "the steer message reached a run that committed")
}

// TestSendToPausedEntityRunsOneHandler: a send that unpauses an entity pokes the
// dispatcher besides the commit notification; the two must not start two workers (two
// concurrent runs of one entity), and the server still shuts down promptly.
func TestSendToPausedEntityRunsOneHandler(t *testing.T) {
	var running, overlaps, runs atomic.Int32
	def := runtime.EntityDefinition{Type: "pausy", Handler: func(ctx *runtime.Context) error {
		if running.Add(1) > 1 {
			overlaps.Add(1)
		}
		defer running.Add(-1)
		if _, ok := ctx.Wake.(runtime.InboxWake); ok {
			runs.Add(1)
			time.Sleep(50 * time.Millisecond) // paces the run: a second worker would overlap it
		}
		return nil
	}}
	e := startServer(t, wake.Options{}, false, def)
	url := e.spawn("pausy", "p", nil)
	for i := range 10 {
		e.signal(url, map[string]any{"signal": "SIGSTOP"})
		testwait.Until(t, "the entity is paused", func() bool { return e.status(url) == "paused" }, 10*time.Second)
		testwait.Until(t, "a paused entity is released", func() bool { return e.wakeStatus(url).Holder == nil }, 10*time.Second)
		e.send(url, map[string]any{"key": fmt.Sprintf("m%d", i), "payload": i})
		testwait.Until(t, "the run happened", func() bool { return runs.Load() >= int32(i+1) }, 10*time.Second)
		testwait.Until(t, "the run is over", func() bool { return running.Load() == 0 })
	}
	require.Zero(t, overlaps.Load(), "runs of one entity overlapped")
	require.EqualValues(t, 10, runs.Load(), "each message once")
	took := e.stop()
	require.Less(t, took, 5*time.Second, "shutdown waits for no idle worker")
}

// TestSendRightAfterSIGSTOPIsDeliveredAtOnce: a send that un-pauses an entity whose
// worker is still letting go (it just saw the SIGSTOP) must start a run at once, not wait
// for the sweep (an hour here, so a lost poke shows up as a timeout).
func TestSendRightAfterSIGSTOPIsDeliveredAtOnce(t *testing.T) {
	var runs atomic.Int32
	def := runtime.EntityDefinition{Type: "stopgo", Handler: func(ctx *runtime.Context) error {
		if _, ok := ctx.Wake.(runtime.InboxWake); ok {
			runs.Add(1)
		}
		return nil
	}}
	e := startServer(t, wake.Options{SweepInterval: time.Hour}, false, def)
	url := e.spawn("stopgo", "s", nil)
	for i := range 60 {
		e.signal(url, map[string]any{"signal": "SIGSTOP"})
		e.send(url, map[string]any{"key": fmt.Sprintf("m%d", i), "payload": i})
		testwait.Until(t, fmt.Sprintf("message %d, sent right after SIGSTOP, was not delivered", i), func() bool { return runs.Load() >= int32(i+1) }, 5*time.Second)
	}
	require.EqualValues(t, 60, runs.Load(), "each message once")
}

// TestTwoProcessesShareOneDatabase runs two wakeprobe processes on one database and
// sends 10,000 messages to 50 entities through both: every message is delivered, per
// entity in stream order, and no two runs of one entity ever overlap.
func TestTwoProcessesShareOneDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two server processes and sends 10,000 messages")
	}
	const entities, total, senders = 50, 10_000, 32
	dbURL := pgtestURL(t)
	args := []string{"--lease", "5s", "--heartbeat", "500ms", "--sweep", "200ms", "--idle-release", "100ms"}
	p1 := startProbe(t, dbURL, args...)
	p2 := startProbe(t, dbURL, args...)
	bases := []string{p1.base, p2.base}
	urls := make([]string, entities)
	for i := range urls {
		urls[i] = spawn(t, bases[i%2], "probe", fmt.Sprintf("e%02d", i), nil)
	}

	start := time.Now()
	jobs := make(chan int)
	var wg sync.WaitGroup
	var failed atomic.Int32
	for g := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				r := do(t, bases[(i+g)%2], "POST", entitiesPath+urls[i%entities]+"/send",
					map[string]any{"key": fmt.Sprintf("m%05d", i), "payload": map[string]any{"i": i}})
				if r.Status != 200 {
					failed.Add(1)
					t.Errorf("send %d: %d %s", i, r.Status, r.Body)
				}
			}
		}()
	}
	for i := range total {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	require.Zero(t, failed.Load())
	sent := time.Since(start)

	pool := pgxPool(t, dbURL)
	count := func(sql string) int64 {
		var n int64
		require.NoError(t, pool.QueryRow(context.Background(), sql).Scan(&n))
		return n
	}
	t.Cleanup(func() { // the processes' logs explain a failure
		if t.Failed() {
			t.Logf("p1 log:\n%s\np2 log:\n%s", tail(p1.logText()), tail(p2.logText()))
		}
	})
	testwait.Until(t, fmt.Sprintf("%d messages delivered", total), func() bool {
		return count(`SELECT count(DISTINCT key) FROM probe_deliveries`) >= total
	}, 3*time.Minute)
	delivered := time.Since(start)
	// wait for the acknowledgements too (the probe records a run before it commits)
	// (the senders' principal entity, made by their first send, has no handler)
	testwait.Until(t, "every entity's stream is handled to its tail", func() bool {
		return count(`SELECT count(*) FROM streams s JOIN entity_wake w ON w.stream_id = s.id WHERE w.scanned_seq < s.tail_seq
			AND w.entity_type <> 'principal'`) == 0
	}, time.Minute)
	t.Logf("10,000 messages: sent in %v (%.0f/s), all delivered after %v (%.0f/s)",
		sent, total/sent.Seconds(), delivered, total/delivered.Seconds())

	overlaps := count(`SELECT count(*) FROM probe_overlaps`)
	runs := count(`SELECT count(*) FROM probe_deliveries`)
	byPid := map[int]int64{}
	rows, err := pool.Query(context.Background(), `SELECT pid, count(*) FROM probe_deliveries GROUP BY pid`)
	require.NoError(t, err)
	for rows.Next() {
		var pid int
		var n int64
		require.NoError(t, rows.Scan(&pid, &n))
		byPid[pid] = n
	}
	require.NoError(t, rows.Err())
	t.Logf("handler runs: %d (duplicates: %d), overlaps: %d, runs by process: p1 %d, p2 %d",
		runs, runs-total, overlaps, byPid[p1.pid()], byPid[p2.pid()])
	require.Zero(t, overlaps, "two runs of one entity overlapped")
	require.EqualValues(t, total, runs, "duplicate deliveries although no process crashed")

	for _, u := range urls {
		events := readStream(t, bases[0], u, "-1").Events
		want := inboxOrder(events)
		require.Len(t, want, total/entities)
		rows, err := pool.Query(context.Background(), `SELECT key FROM probe_deliveries WHERE entity = $1 ORDER BY id`, u)
		require.NoError(t, err)
		var got []string
		for rows.Next() {
			var k string
			require.NoError(t, rows.Scan(&k))
			if !slices.Contains(got, k) {
				got = append(got, k)
			}
		}
		require.NoError(t, rows.Err())
		require.Equal(t, want, got, "delivery order of %s", u)
		acks := texts(t, events)
		require.Len(t, acks, total/entities, "one acknowledged text per message of %s", u)
		for i, k := range want {
			require.Equal(t, "ack "+k, acks[i])
		}
	}
}

func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}

// TestWakeOnlyAfterCommit: a message appended in a transaction that is still open wakes
// nobody; it is delivered when the transaction commits, and never when it rolls back.
func TestWakeOnlyAfterCommit(t *testing.T) {
	rec := &recorder{}
	def := runtime.EntityDefinition{Type: "committed", Handler: func(ctx *runtime.Context) error { rec.add(ctx); return nil }}
	e := startServer(t, wake.Options{}, false, def)
	url := e.spawn("committed", "c", nil)
	rec.wait(t, url, 10*time.Second, func(s seen) bool { return s.Wake.Kind() == "spawn" })
	// The spawn's acknowledgement appends to c's stream through a commit lane. If it were
	// still queued when the transactions below lock c's stream row, it would hold up its
	// lane, and with it the marker's messages the transactions wait for.
	testwait.Until(t, "the spawn of c is acknowledged", func() bool {
		return e.queryInt(`SELECT count(*) FROM streams s JOIN entity_wake w ON w.stream_id = s.id
			WHERE s.path = $1 AND w.scanned_seq = s.tail_seq`, url+"/main") == 1
	}, 10*time.Second)
	// While a transaction is open, a message to another entity is handled: delivery ran
	// (claims, sweeps, reads) while the append was uncommitted.
	marker := e.spawn("committed", "marker", nil)
	deliveredMeanwhile := func(key string) {
		e.send(marker, map[string]any{"key": key, "payload": 1})
		rec.waitKey(t, marker, key, 10*time.Second)
	}
	msg := func(key string) []byte {
		return wire.Event{Type: "inbox", Key: key, Value: []byte(`{"from":"/principal/system%3Atest","payload":1,"mode":"immediate","status":"processed"}`),
			Operation: wire.OpInsert, Timestamp: time.Now()}.Marshal()
	}
	ctx := context.Background()
	errRollback := errors.New("roll back")
	err := e.streams().WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		_, err := tx.Append(ctx, &streamdb.AppendRequest{Path: url + "/main", Messages: [][]byte{msg("rolled-back")}})
		require.NoError(t, err)
		deliveredMeanwhile("m1")
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)
	require.NoError(t, e.streams().WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		_, err := tx.Append(ctx, &streamdb.AppendRequest{Path: url + "/main", Messages: [][]byte{msg("committed")}})
		require.NoError(t, err)
		deliveredMeanwhile("m2")
		require.Empty(t, rec.inboxKeys(url), "delivered before its commit")
		return nil
	}))
	rec.waitKey(t, url, "committed", 10*time.Second) // nothing of the rolled-back one exists to come
	require.Equal(t, []string{"committed"}, rec.inboxKeys(url))
}

// TestObservationFilterAndStop: an observer that names event types is woken only by
// those, and hears of the source's graceful stop.
func TestObservationFilterAndStop(t *testing.T) {
	rec := &recorder{}
	observer := runtime.EntityDefinition{Type: "observer", Handler: func(ctx *runtime.Context) error {
		rec.add(ctx)
		if msg, ok := ctx.Wake.(runtime.InboxWake); ok {
			return ctx.Observe(string(msg.Payload[1:len(msg.Payload)-1]), "progress")
		}
		return nil
	}}
	worker := runtime.EntityDefinition{Type: "worker", Handler: func(ctx *runtime.Context) error {
		rec.add(ctx)
		if msg, ok := ctx.Wake.(runtime.InboxWake); ok {
			return errors.Join(ctx.WriteText("chatter"), ctx.WriteEvent("progress", msg.Key, "insert", map[string]any{"done": msg.Key}))
		}
		return nil
	}}
	e := startServer(t, wake.Options{}, false, observer, worker)
	o := e.spawn("observer", "o", nil)
	w := e.spawn("worker", "w", nil)
	e.send(o, map[string]any{"key": "watch", "payload": w})
	testwait.Until(t, "the observation is registered", func() bool {
		return e.queryInt(`SELECT count(*) FROM wake_observations WHERE observer_url = $1`, o) == 1
	}, 10*time.Second)
	e.send(w, map[string]any{"key": "job-1", "payload": 1})
	s := rec.wait(t, o, 10*time.Second, func(s seen) bool { return s.Wake.Kind() == "observation" })
	ob := s.Wake.(runtime.ObservationWake)
	require.Equal(t, "progress", ob.Event.Type)
	require.Equal(t, "job-1", ob.Event.Key)
	jsonEq(t, `{"done":"job-1"}`, ob.Event.Value)

	e.signal(w, map[string]any{"signal": "SIGTERM"})
	s = rec.wait(t, o, 10*time.Second, func(s seen) bool {
		ob, ok := s.Wake.(runtime.ObservationWake)
		return ok && ob.Lifecycle != ""
	})
	require.Equal(t, "stopped", s.Wake.(runtime.ObservationWake).Lifecycle)
	require.Equal(t, w, s.Wake.(runtime.ObservationWake).Source)
	require.Equal(t, []string{"spawn", "inbox:watch", "observation:progress", "observation:stopped"}, kinds(rec.of(o)),
		"the text was not observed")
	require.Zero(t, e.queryInt(`SELECT count(*) FROM wake_observations WHERE source_url = $1`, w), "an ended entity is observed no more")
}

// TestContextHelpers: the Context's helpers between runs — state schemas refuse bad
// custom events, a run reads earlier runs' writes through State, slash commands read
// their own changes, context entries are inserted and removed, sends to an entity that
// ended fail, observations are removed.
func TestContextHelpers(t *testing.T) {
	var mu sync.Mutex
	got := map[string]any{}
	put := func(k string, v any) { mu.Lock(); got[k] = v; mu.Unlock() }
	def := runtime.EntityDefinition{
		Type:         "helper",
		StateSchemas: map[string]json.RawMessage{"progress": json.RawMessage(`{"type":"object","required":["step"]}`)},
		Handler: func(ctx *runtime.Context) error {
			msg, ok := ctx.Wake.(runtime.InboxWake)
			if !ok {
				return nil
			}
			switch msg.Key {
			case "write":
				var sve *runtime.StateValidationError
				put("bad-progress", errors.As(ctx.WriteEvent("progress", "p2", "insert", map[string]any{}), &sve) && sve.Details != nil)
				put("unknown-type", errors.As(ctx.WriteEvent("unknown", "k", "insert", map[string]any{}), &sve) && sve.Details == nil)
				put("bad-json", ctx.WriteEvent("progress", "p3", "insert", json.RawMessage(`{`)) != nil)
				put("no-key", ctx.WriteEvent("progress", "", "insert", map[string]any{"step": 1}) != nil)
				put("bad-op", ctx.WriteEvent("progress", "p4", "merge", map[string]any{"step": 1}) != nil)
				put("no-id", ctx.InsertContext(runtime.ContextEntry{}) != nil)
				desc := "says hello"
				return errors.Join(
					ctx.WriteEvent("progress", "p1", "insert", map[string]any{"step": 1}),
					ctx.WriteText("one"),
					ctx.InsertContext(runtime.ContextEntry{ID: "c1", Name: "notes", Content: "remember"}),
					ctx.SlashCommands.Register(runtime.SlashCommandRegistration{Definition: runtime.SlashCommand{Name: "hello", Description: &desc}}),
					func() error {
						row, found, err := ctx.SlashCommands.Get("hello")
						put("own-command", found && row.Name == "hello")
						return err
					}(),
				)
			case "read":
				var p struct {
					Step int `json:"step"`
				}
				found, err := ctx.State().Decode("progress", "p1", &p)
				put("decoded", found && err == nil && p.Step == 1)
				put("texts", len(ctx.State().Keys("text")))
				put("has-c1", ctx.HasContext("c1"))
				list, err := ctx.SlashCommands.List()
				put("listed", err == nil && len(list) == 1 && list[0].Name == "hello")
				if err := ctx.RemoveContext("c1", map[string]any{"why": "done"}); err != nil {
					return err
				}
				put("has-c1-after-remove", ctx.HasContext("c1"))
				if err := ctx.SlashCommands.Unregister("hello", ""); err != nil {
					return err
				}
				_, found, _ = ctx.SlashCommands.Get("hello")
				put("command-after-unregister", found)
				var target struct {
					URL string `json:"url"`
				}
				_ = json.Unmarshal(msg.Payload, &target)
				ctx.Unobserve(target.URL)
				return nil
			case "later":
				put("has-c1-later", ctx.HasContext("c1"))
				var target struct {
					URL string `json:"url"`
				}
				_ = json.Unmarshal(msg.Payload, &target)
				put("send-to-killed", ctx.Send(target.URL, runtime.Message{Payload: 1}) != nil)
			}
			return nil
		},
	}
	e := startServer(t, wake.Options{}, false, def)
	url := e.spawn("helper", "h", nil)
	other := e.spawn("helper", "other", nil)
	_, err := e.pool.Exec(context.Background(), `INSERT INTO wake_observations (observer_url, source_url) VALUES ($1, $2)`, url, other)
	require.NoError(t, err)
	e.send(url, map[string]any{"key": "write", "payload": 1})
	e.send(url, map[string]any{"key": "read", "payload": map[string]any{"url": other}})
	testwait.Until(t, "Unobserve commits with the run", func() bool {
		return e.queryInt(`SELECT count(*) FROM wake_observations WHERE observer_url = $1`, url) == 0
	}, 10*time.Second)
	e.kill(other)
	e.send(url, map[string]any{"key": "later", "payload": map[string]any{"url": other}})
	testwait.Until(t, "the send to a killed entity is answered", func() bool { mu.Lock(); defer mu.Unlock(); _, ok := got["send-to-killed"]; return ok }, 10*time.Second)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, map[string]any{
		"bad-progress": true, "unknown-type": true, "bad-json": true, "no-key": true, "bad-op": true, "no-id": true,
		"own-command": true, "decoded": true, "texts": 1, "has-c1": true, "listed": true, "has-c1-after-remove": false,
		"command-after-unregister": false, "has-c1-later": false, "send-to-killed": true,
	}, got)
	require.Zero(t, e.queryInt(`SELECT count(*) FROM slash_commands WHERE entity_url = $1`, url))
	types := eventTypes(e.events(url))
	require.Contains(t, types, "context_removed")
	require.NotContains(t, types, "unknown")
}
