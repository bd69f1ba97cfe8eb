package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/clock"
	"github.com/entityd/entityd/internal/metrics"
	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/runtime"
	"github.com/entityd/entityd/wake"
)

// TestFailedRunLeavesOnlyErrorEvents: a handler that writes text, custom events and
// context, registers a slash command, sends to another entity, schedules a timer and
// observes someone, and then fails (error or panic), leaves nothing of it: only error
// events, then the failure mark. The same run succeeding writes all of it (the control).
func TestFailedRunLeavesOnlyErrorEvents(t *testing.T) {
	sinkRec := &recorder{}
	sink := runtime.EntityDefinition{Type: "sink", Handler: func(ctx *runtime.Context) error { sinkRec.add(ctx); return nil }}
	doer := runtime.EntityDefinition{Type: "doer", Handler: func(ctx *runtime.Context) error {
		msg, ok := ctx.Wake.(runtime.InboxWake)
		if !ok {
			return nil
		}
		if msg.Key == "marker" {
			return ctx.WriteText("marker")
		}
		var p struct {
			Sink string `json:"sink"`
			End  string `json:"end"`
		}
		if err := json.Unmarshal(msg.Payload, &p); err != nil {
			return err
		}
		desc := "registered by " + msg.Key
		_, schedErr := ctx.Schedule(time.Now().Add(time.Hour), map[string]any{"k": msg.Key})
		if err := errors.Join(
			ctx.WriteText("partial output of "+msg.Key),
			ctx.WriteEvent("progress", "p-"+msg.Key, "insert", map[string]any{"step": 1}),
			ctx.InsertContext(runtime.ContextEntry{ID: "ctx-" + msg.Key, Name: "notes", Content: "x"}),
			ctx.SlashCommands.Register(runtime.SlashCommandRegistration{
				Definition: runtime.SlashCommand{Name: "dyn-" + msg.Key, Description: &desc}}),
			ctx.Send(p.Sink, runtime.Message{Type: "note", Key: "note-" + msg.Key, Payload: map[string]any{"from": msg.Key}}),
			schedErr,
			ctx.Observe(p.Sink),
		); err != nil {
			return fmt.Errorf("unexpected: %w", err)
		}
		switch p.End {
		case "error":
			return errors.New("boom: " + msg.Key)
		case "panic":
			panic("kaboom: " + msg.Key)
		}
		return nil
	}}
	e := startServer(t, wake.Options{MaxAttempts: 2}, true, sink, doer)

	for _, end := range []string{"error", "panic", "ok"} {
		t.Run(end, func(t *testing.T) {
			s := e.spawn("sink", "s-"+end, nil)
			sinkRec.wait(t, s, 10*time.Second, func(r seen) bool { return r.Wake.Kind() == "spawn" })
			sinkBefore := len(e.events(s))
			a := e.spawn("doer", "d-"+end, nil)
			key := "job-" + end
			e.send(a, map[string]any{"key": key, "payload": map[string]any{"sink": s, "end": end}})

			if end == "ok" {
				testwait.Until(t, "8 inbox events after the key", func() bool { return len(after(t, e.events(a), "inbox", key)) >= 8 }, 10*time.Second)
				// the run's own writes in order, its end, then what the server appends for
				// the slash command registration in the same transaction
				require.Equal(t, []string{"run", "text", "text_delta", "text", "progress", "context_inserted", "run", "slash_command"},
					eventTypes(after(t, e.events(a), "inbox", key)))
				sinkRec.waitKey(t, s, "note-"+key, 10*time.Second)
				require.EqualValues(t, 1, e.queryInt(`SELECT count(*) FROM slash_commands WHERE entity_url = $1`, a))
				require.EqualValues(t, 1, e.queryInt(`SELECT count(*) FROM wake_timers WHERE entity_url = $1`, a))
				require.EqualValues(t, 1, e.queryInt(`SELECT count(*) FROM wake_observations WHERE observer_url = $1`, a))
				require.Empty(t, e.wakeStatus(a).Failures)
				return
			}

			testwait.Until(t, "the message is given up on", func() bool { return len(e.wakeStatus(a).Failures) == 1 }, 10*time.Second)
			// The marker: a later message is handled; nothing came between it and the give-up.
			e.send(a, map[string]any{"key": "marker", "payload": 1})
			testwait.Until(t, "the marker is handled", func() bool { return slices.Contains(texts(t, e.events(a)), "marker") }, 10*time.Second)
			evs := after(t, e.events(a), "inbox", key)
			evs = evs[:slices.IndexFunc(evs, func(ev event) bool { return ev.Type == "inbox" && ev.Key == "marker" })]
			require.Equal(t, []string{"error", "run", "error", "inbox", "run"}, eventTypes(evs),
				"nothing but error events, and the failure mark in a failed run")
			want := "boom: " + key
			if end == "panic" {
				want = "handler panicked: kaboom: " + key
			}
			requireFailedRun(t, evs[1:], want)
			evs = append([]event{evs[0], evs[2]}, evs[3])
			for i, ev := range evs[:2] {
				require.Equal(t, want, ev.str(t, "message"))
				var attempt int
				ev.field(t, "attempt", &attempt)
				require.Equal(t, i+1, attempt)
				var retry bool
				ev.field(t, "will_retry", &retry)
				require.Equal(t, i == 0, retry)
				require.Equal(t, "inbox", ev.str(t, "wake"))
				require.Equal(t, key, ev.str(t, "key"))
			}
			require.Equal(t, "update", evs[2].op())
			require.Equal(t, key, evs[2].Key)
			require.Equal(t, "failed", evs[2].str(t, "status"))

			require.Len(t, e.events(s), sinkBefore, "the other entity got nothing")
			require.Equal(t, []string{"spawn"}, kinds(sinkRec.of(s)))
			require.Zero(t, e.queryInt(`SELECT count(*) FROM slash_commands WHERE entity_url = $1`, a), "no slash command")
			require.Zero(t, e.queryInt(`SELECT count(*) FROM wake_timers WHERE entity_url = $1`, a), "no timer")
			require.Zero(t, e.queryInt(`SELECT count(*) FROM wake_observations WHERE observer_url = $1`, a), "no observation")
		})
	}
}

// TestRetryWithBackoffThenGiveUp: an always failing message is tried MaxAttempts times
// with growing gaps, then marked failed, and the entity moves on; a message failing twice
// and then succeeding commits only its successful run. The server keeps time with a
// test clock: each retry comes when the test moves the clock to its retry_at.
func TestRetryWithBackoffThenGiveUp(t *testing.T) {
	rec := &recorder{}
	def := runtime.EntityDefinition{Type: "flaky", Handler: func(ctx *runtime.Context) error {
		rec.add(ctx)
		msg, ok := ctx.Wake.(runtime.InboxWake)
		if !ok {
			return nil
		}
		switch {
		case msg.Key == "poison":
			if err := ctx.WriteText("poison output"); err != nil {
				return err
			}
			return fmt.Errorf("poison attempt %d", ctx.Attempt)
		case strings.HasPrefix(msg.Key, "twice"):
			if err := ctx.WriteText(fmt.Sprintf("%s attempt %d", msg.Key, ctx.Attempt)); err != nil {
				return err
			}
			if ctx.Attempt < 3 {
				return fmt.Errorf("%s attempt %d fails", msg.Key, ctx.Attempt)
			}
			return nil
		}
		return ctx.WriteText("ok " + msg.Key)
	}}
	const base = time.Second
	clk := clock.NewTest(time.Now())
	e := startServerOnClock(t, clk, wake.Options{MaxAttempts: 3, BaseBackoff: base, MaxBackoff: time.Minute}, true, def)
	url := e.spawn("flaky", "f", nil)
	// retry waits for failed attempt n to be recorded, checks when the next is due, and
	// moves the clock there
	retry := func(n int, delay time.Duration) {
		t.Helper()
		var st wake.Status
		testwait.Until(t, fmt.Sprintf("failed attempt %d recorded", n), func() bool {
			st = e.wakeStatus(url)
			return st.Attempts == n && st.RetryAt != nil
		})
		require.True(t, st.RetryAt.Equal(clk.Now().Add(delay)), "attempt %d retried at %v, want %v later", n, st.RetryAt, delay)
		clk.Set(*st.RetryAt)
	}

	e.send(url, map[string]any{"key": "poison", "payload": 1})
	retry(1, base)   // the first retry waits the base backoff
	retry(2, 2*base) // the second twice as long
	testwait.Until(t, "one failure is recorded", func() bool { return len(e.wakeStatus(url).Failures) == 1 }, 10*time.Second)
	// The entity moves on; a fourth attempt of "poison" would come before the next
	// message (one unit of work at a time, in order).
	e.send(url, map[string]any{"key": "next", "payload": 2})
	rec.waitKey(t, url, "next", 10*time.Second)
	testwait.Until(t, "the next message is handled", func() bool { return slices.Contains(texts(t, e.events(url)), "ok next") }, 10*time.Second)
	var runs []seen
	for _, s := range rec.of(url) {
		if s.key() == "poison" {
			runs = append(runs, s)
		}
	}
	require.Len(t, runs, 3, "exactly MaxAttempts attempts")
	for i, s := range runs {
		require.Equal(t, i+1, s.Attempt)
	}

	evs := after(t, e.events(url), "inbox", "poison")
	require.Equal(t, []string{"error", "error", "run", "error", "inbox", "run", "inbox", "run", "text", "text_delta", "text", "run"},
		eventTypes(evs), "then next and its reply")
	requireFailedRun(t, evs[2:6], "poison attempt 3")
	require.Equal(t, []string{"ok next"}, texts(t, evs))
	evs = append([]event{evs[0], evs[1], evs[3], evs[4]}, evs[6:]...)
	for i, ev := range evs[:3] {
		require.Equal(t, fmt.Sprintf("poison attempt %d", i+1), ev.str(t, "message"))
		var attempt, maxAttempts int
		var retry bool
		ev.field(t, "attempt", &attempt)
		ev.field(t, "max_attempts", &maxAttempts)
		ev.field(t, "will_retry", &retry)
		require.Equal(t, i+1, attempt)
		require.Equal(t, 3, maxAttempts)
		require.Equal(t, i < 2, retry)
	}
	mark := evs[3]
	require.Equal(t, "update", mark.op())
	require.Equal(t, "poison", mark.Key)
	require.Equal(t, "failed", mark.str(t, "status"))
	require.Equal(t, "poison attempt 3", mark.str(t, "error"))
	var attempts int
	mark.field(t, "attempts", &attempts)
	require.Equal(t, 3, attempts)

	st := e.wakeStatus(url)
	require.Len(t, st.Failures, 1)
	require.Equal(t, "inbox", st.Failures[0].Kind)
	require.Equal(t, "poison", st.Failures[0].Key)
	require.Equal(t, 3, st.Failures[0].Attempts)
	require.Equal(t, "poison attempt 3", st.Failures[0].Error)
	require.Zero(t, st.Attempts)
	require.Nil(t, st.RetryAt)

	// failing twice, then succeeding: only the third run's writes are committed
	e.send(url, map[string]any{"key": "twice-1", "payload": 3})
	retry(1, base)
	retry(2, 2*base)
	testwait.Until(t, "the third attempt replies", func() bool { return slices.Contains(texts(t, e.events(url)), "twice-1 attempt 3") }, 10*time.Second)
	evs = after(t, e.events(url), "inbox", "twice-1")
	require.Equal(t, []string{"error", "error", "run", "text", "text_delta", "text", "run"}, eventTypes(evs))
	require.Equal(t, []string{"twice-1 attempt 3"}, texts(t, evs))
	st = e.wakeStatus(url)
	require.Len(t, st.Failures, 1, "no failure record for a message that succeeded")
	require.Zero(t, st.Attempts)
	require.Equal(t, []string{"poison attempt 1", "poison attempt 2", "poison attempt 3"},
		func() []string {
			var out []string
			for _, ev := range ofType(e.events(url), "error") {
				if ev.str(t, "key") == "poison" {
					out = append(out, ev.str(t, "message"))
				}
			}
			return out
		}())
	require.NotContains(t, texts(t, e.events(url)), "poison output")
}

// TestStaleHolderWritesAreRefused: while a handler runs, another holder claims the entity
// (as a process would after this one's lease lapsed). The run's acknowledgement is
// refused, this process stops delivering to the entity while the claim holds, and the
// message is delivered again once the other holder's lease is gone.
func TestStaleHolderWritesAreRefused(t *testing.T) {
	rec := &recorder{}
	started := make(chan struct{}, 10)
	release := make(chan struct{})
	def := runtime.EntityDefinition{Type: "slowpoke", Handler: func(ctx *runtime.Context) error {
		rec.add(ctx)
		msg, ok := ctx.Wake.(runtime.InboxWake)
		if !ok {
			return nil
		}
		if msg.Key == "slow" {
			started <- struct{}{}
			<-release
		}
		return ctx.WriteText("done " + msg.Key)
	}}
	e := startServer(t, wake.Options{}, true, def)
	url := e.spawn("slowpoke", "s", nil)
	e.send(url, map[string]any{"key": "slow", "payload": 1})
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow run did not start")
	}
	before := e.wakeStatus(url)
	require.NotNil(t, before.Holder)
	ctx := context.Background()
	_, err := e.pool.Exec(ctx, `INSERT INTO wake_holders (holder_id, lease_until) VALUES ('fake-holder', now() + interval '1 hour')`)
	require.NoError(t, err)
	var epoch int64
	require.NoError(t, e.pool.QueryRow(ctx, `UPDATE entity_wake SET epoch = epoch + 1, holder = 'fake-holder'
		WHERE entity_url = $1 RETURNING epoch`, url).Scan(&epoch))

	fenced := metrics.WakesFenced.WithLabelValues("slowpoke")
	fencedBefore := counterValue(fenced)
	e.send(url, map[string]any{"key": "next", "payload": 2})
	close(release)
	// The marker: the stale run's acknowledgement is refused (and counted) by the fence.
	testwait.Until(t, "a fenced write is counted", func() bool { return counterValue(fenced) > fencedBefore }, 10*time.Second)
	require.NotContains(t, texts(t, e.events(url)), "done slow", "the stale run's writes were refused")
	st := e.wakeStatus(url)
	require.Equal(t, before.ScannedSeq, st.ScannedSeq, "the stale acknowledgement moved nothing")
	require.Equal(t, epoch, st.Epoch)
	require.Equal(t, "fake-holder", *st.Holder)
	require.Equal(t, []string{"slow"}, rec.inboxKeys(url), "this process delivers nothing while the other holds the entity")

	// the other holder goes away (its lease is gone): the entity is taken over again and
	// the message is delivered again
	_, err = e.pool.Exec(ctx, `DELETE FROM wake_holders WHERE holder_id = 'fake-holder'`)
	require.NoError(t, err)
	rec.waitKey(t, url, "next", 10*time.Second)
	testwait.Until(t, "two replies are stored", func() bool { return len(texts(t, e.events(url))) == 2 }, 10*time.Second)
	require.Equal(t, []string{"done slow", "done next"}, texts(t, e.events(url)), "each once, in order")
	require.Equal(t, []string{"slow", "slow", "next"}, rec.inboxKeys(url))
	require.Greater(t, e.wakeStatus(url).Epoch, epoch)
}

// TestSIGKILLMidHandlerIsRedelivered kills a real server process while a handler runs;
// another process takes the entity over when the lease lapses and delivers the message
// again, acknowledged once.
func TestSIGKILLMidHandlerIsRedelivered(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real server processes")
	}
	dbURL := pgtestURL(t)
	args := []string{"--lease", "2s", "--heartbeat", "300ms", "--sweep", "200ms"}
	p1 := startProbe(t, dbURL, args...)
	url := spawn(t, p1.base, "probe", "k", nil)
	send(t, p1.base, url, map[string]any{"key": "first", "payload": map[string]any{}})
	send(t, p1.base, url, map[string]any{"key": "slow", "payload": map[string]any{"sleep_ms": 2000}})
	pool := pgxPool(t, dbURL)
	deliveries := func(key string) []int {
		rows, err := pool.Query(context.Background(), `SELECT pid FROM probe_deliveries WHERE key = $1 ORDER BY id`, key)
		require.NoError(t, err)
		var pids []int
		for rows.Next() {
			var pid int
			require.NoError(t, rows.Scan(&pid))
			pids = append(pids, pid)
		}
		require.NoError(t, rows.Err())
		return pids
	}
	testwait.Until(t, "the slow run starts", func() bool { return len(deliveries("slow")) == 1 }, 20*time.Second)
	p1.kill()
	killedAt := time.Now()
	require.Equal(t, []int{p1.pid()}, deliveries("slow"))

	p2 := startProbe(t, dbURL, args...)
	testwait.Until(t, "the message is delivered again", func() bool { return len(deliveries("slow")) == 2 }, 30*time.Second)
	t.Logf("redelivered %v after the SIGKILL", time.Since(killedAt))
	require.Equal(t, []int{p1.pid(), p2.pid()}, deliveries("slow"))
	require.Equal(t, []int{p1.pid()}, deliveries("first"), "acknowledged work is not redelivered")
	testwait.Until(t, "the redelivered run is acknowledged", func() bool {
		return slices.Contains(texts(t, readStream(t, p2.base, url, "-1").Events), "ack slow")
	}, 30*time.Second)

	send(t, p2.base, url, map[string]any{"key": "after", "payload": map[string]any{}})
	testwait.Until(t, "the second server acknowledges the message sent after", func() bool {
		return slices.Contains(texts(t, readStream(t, p2.base, url, "-1").Events), "ack after")
	}, 30*time.Second)
	events := readStream(t, p2.base, url, "-1").Events
	require.Equal(t, []string{"ack first", "ack slow", "ack after"}, texts(t, events), "each acknowledged once, in order")
	slowSeq := int64(0)
	for i, ev := range events {
		if ev.Type == "inbox" && ev.Key == "slow" {
			slowSeq = int64(i + 1)
		}
	}
	require.NotZero(t, slowSeq)
	st := wakeStatus(t, p2.base, url)
	require.GreaterOrEqual(t, st.ScannedSeq, slowSeq, "the scan moved past the message")
	require.Empty(t, st.Failures)
	var overlaps int64
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM probe_overlaps`).Scan(&overlaps))
	require.Zero(t, overlaps)
}

// TestRestartDeliversTheRest: a server stopped (gracefully) with a backlog finishes the
// run in progress; a server started later on the database delivers the rest, each
// message once, in order.
func TestRestartDeliversTheRest(t *testing.T) {
	rec := &recorder{}
	def := runtime.EntityDefinition{Type: "backlog", Handler: func(ctx *runtime.Context) error {
		rec.add(ctx)
		msg, ok := ctx.Wake.(runtime.InboxWake)
		if !ok {
			return nil
		}
		time.Sleep(100 * time.Millisecond) // paces the runs: the stop comes with a backlog left
		return ctx.WriteText("ack " + msg.Key)
	}}
	dbURL := pgtestURL(t)
	e1 := startServerOn(t, dbURL, wake.Options{}, false, def)
	url := e1.spawn("backlog", "b", nil)
	var keys []string
	for i := range 10 {
		keys = append(keys, fmt.Sprintf("m%d", i))
		e1.send(url, map[string]any{"key": keys[i], "payload": i})
	}
	testwait.Until(t, "3 inbox messages arrive", func() bool { return len(rec.inboxKeys(url)) >= 3 }, 10*time.Second)
	e1.stop()
	stoppedAt := len(rec.inboxKeys(url))
	require.Less(t, stoppedAt, 10, "the backlog was not finished before the stop")

	e2 := startServerOn(t, dbURL, wake.Options{}, false, def)
	testwait.Until(t, "the rest is delivered", func() bool { return len(texts(t, e2.events(url))) == 10 }, 20*time.Second)
	// a redelivery would come before a message sent now
	e2.send(url, map[string]any{"key": "marker", "payload": -1})
	testwait.Until(t, "the acknowledgement marker is stored by the second server", func() bool { return slices.Contains(texts(t, e2.events(url)), "ack marker") }, 10*time.Second)
	require.Equal(t, append(slices.Clone(keys), "marker"), rec.inboxKeys(url), "each message once, in order, across the restart")
	want := make([]string, len(keys))
	for i, k := range keys {
		want[i] = "ack " + k
	}
	want = append(want, "ack marker")
	require.Equal(t, want, texts(t, e2.events(url)))
}

// TestHandlerTimeout: a run longer than HandlerTimeout has its context cancelled and
// counts as a failed attempt.
func TestHandlerTimeout(t *testing.T) {
	def := runtime.EntityDefinition{Type: "sleepy", Handler: func(ctx *runtime.Context) error {
		if _, ok := ctx.Wake.(runtime.InboxWake); !ok {
			return nil
		}
		if err := ctx.WriteText("too late"); err != nil {
			return err
		}
		<-ctx.Done()
		return ctx.Err()
	}}
	e := startServer(t, wake.Options{HandlerTimeout: 100 * time.Millisecond, MaxAttempts: 2}, true, def)
	url := e.spawn("sleepy", "s", nil)
	e.send(url, map[string]any{"key": "nap", "payload": 1})
	testwait.Until(t, "one failure is recorded", func() bool { return len(e.wakeStatus(url).Failures) == 1 }, 10*time.Second)
	st := e.wakeStatus(url)
	require.Equal(t, "context deadline exceeded", st.Failures[0].Error)
	require.Equal(t, 2, st.Failures[0].Attempts)
	evs := after(t, e.events(url), "inbox", "nap")
	require.Equal(t, []string{"error", "run", "error", "inbox", "run"}, eventTypes(evs))
	requireFailedRun(t, evs[1:], "context deadline exceeded")
}

// counterValue reads a Prometheus counter of this process.
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}
