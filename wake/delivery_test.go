package wake

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/internal/clock"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wire"
)

// scriptedRunner runs handlers of type "t": each run is recorded (at the time of clock,
// nil: the wall clock), then answered by script (nil: write an "ack <key>" text event).
type scriptedRunner struct {
	mu     sync.Mutex
	runs   []run
	script func(job *Job) (Effects, error)
	clock  clock.Clock
}

type run struct {
	url     string
	kind    string
	key     string
	attempt int
	at      time.Time
}

func (r *scriptedRunner) Handles(entityType string) bool { return entityType == "t" }

func (r *scriptedRunner) Run(_ context.Context, job *Job) (Effects, error) {
	key := ""
	switch w := job.Wake.(type) {
	case wire.InboxWake:
		key = w.Key
	case wire.ScheduleWake:
		key = w.ID
	case wire.SignalWake:
		key = w.Signal
	}
	r.mu.Lock()
	r.runs = append(r.runs, run{url: job.EntityURL, kind: job.Wake.Kind(), key: key, attempt: job.Attempt, at: clock.Or(r.clock).Now()})
	r.mu.Unlock()
	if r.script != nil {
		return r.script(job)
	}
	return &testEffects{events: [][]byte{textEvent("ack " + key)}}, nil
}

// keys are the keys of the runs of url of the given kind, in order.
func (r *scriptedRunner) keys(url, kind string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, x := range r.runs {
		if x.url == url && x.kind == kind {
			out = append(out, x.key)
		}
	}
	return out
}

func (r *scriptedRunner) attempts(url, key string) []run {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []run
	for _, x := range r.runs {
		if x.url == url && x.key == key {
			out = append(out, x)
		}
	}
	return out
}

// deliveryFixture is a fixture with a running dispatcher and a sender.
type deliveryFixture struct {
	*fixture
	d      *Dispatcher
	runner *scriptedRunner
	sender *inbox.Sender
}

func startDelivery(t *testing.T, runner *scriptedRunner, opts Options) *deliveryFixture {
	t.Helper()
	return startDeliveryOn(t, nil, runner, opts)
}

// startDeliveryOn starts a dispatcher whose store keeps time with clk (nil: the wall
// clock).
func startDeliveryOn(t *testing.T, clk clock.Clock, runner *scriptedRunner, opts Options) *deliveryFixture {
	t.Helper()
	f := newFixtureOn(t, clk, entity.Options{Handled: func(typ string) bool { return typ == "t" }, OnEnd: NotifyEnd})
	opts.Heartbeat = 100 * time.Millisecond
	opts.SweepInterval = 100 * time.Millisecond
	if opts.BaseBackoff == 0 {
		opts.BaseBackoff = 20 * time.Millisecond
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = 200 * time.Millisecond
	}
	d := New(f.store, runner, []string{"t"}, opts)
	require.NoError(t, d.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d.Stop(ctx)
	})
	return &deliveryFixture{fixture: f, d: d, runner: runner, sender: inbox.NewSender(f.registry, f.store, inbox.Limits{}, inbox.Hooks{})}
}

func (f *deliveryFixture) send(url, key, mode string, payload string) {
	f.t.Helper()
	e, err := f.registry.Get(context.Background(), url)
	require.NoError(f.t, err)
	_, err = f.sender.Send(context.Background(), e, &inbox.SendRequest{Key: key, Mode: mode, Payload: json.RawMessage(payload)})
	require.NoError(f.t, err)
}

func (f *deliveryFixture) texts(url string) []string {
	f.t.Helper()
	m, err := f.store.Lookup(context.Background(), entitypath.Main(url))
	require.NoError(f.t, err)
	msgs, err := f.store.Read(context.Background(), m, streamdb.Start, m.Tail)
	require.NoError(f.t, err)
	var out []string
	for _, msg := range msgs {
		var ev struct {
			Type  string `json:"type"`
			Value struct {
				Text string `json:"text"`
			} `json:"value"`
		}
		require.NoError(f.t, json.Unmarshal(msg.Data, &ev))
		if ev.Type == "text" {
			out = append(out, ev.Value.Text)
		}
	}
	return out
}

// TestDeliveryInOrderWithState: messages are delivered one unit at a time in stream
// order, each run's writes are committed with its acknowledgement, and the scan position
// reaches the tail; the materialized state a run sees includes earlier runs' writes.
func TestDeliveryInOrderWithState(t *testing.T) {
	var seen []int
	var mu sync.Mutex
	r := &scriptedRunner{}
	r.script = func(job *Job) (Effects, error) {
		st, err := job.State()
		if err != nil {
			return nil, err
		}
		mu.Lock()
		seen = append(seen, len(st.Keys("text")))
		mu.Unlock()
		key := ""
		if w, ok := job.Wake.(wire.InboxWake); ok {
			key = w.Key
		}
		return &testEffects{events: [][]byte{textEvent("ack " + key)}}, nil
	}
	f := startDelivery(t, r, Options{})
	url := f.spawn("ordered")
	var want []string
	for i := range 8 {
		k := fmt.Sprintf("m%d", i)
		want = append(want, k)
		f.send(url, k, "queued", `{"i":`+fmt.Sprint(i)+`}`)
	}
	testwait.Until(t, "every run's write committed", func() bool { return len(f.texts(url)) == 9 })
	require.Equal(t, want, r.keys(url, "inbox"))
	require.Equal(t, []string{""}, r.keys(url, "spawn"), "the spawn wake first, once")
	require.Equal(t, append([]string{"ack "}, prefixed("ack ", want)...), f.texts(url), "writes in delivery order")
	mu.Lock()
	require.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8}, seen, "each run sees the writes of the runs before it")
	mu.Unlock()
	// entity_created and the eight messages come first in the stream, whatever the
	// interleaving with the acknowledgements' writes: the last message is at seq 9 or later
	testwait.Until(t, "the scan position follows the acknowledgements", func() bool { return f.row(url).scanned >= 9 })
	st, err := StatusOf(context.Background(), f.pool, url)
	require.NoError(t, err)
	require.Empty(t, st.Failures)
	require.Zero(t, st.Attempts)
}

func prefixed(p string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = p + s
	}
	return out
}

// TestFailuresRetryWithBackoffThenGiveUp: a failing run (an error, then a panic) is
// retried after growing delays, then recorded as failed (wake_failures, an error event per
// attempt, the inbox row marked failed) and the entity moves on to the next message. The
// delays pass on a test clock: each retry comes when the clock reaches its retry_at.
func TestFailuresRetryWithBackoffThenGiveUp(t *testing.T) {
	clk := clock.NewTest(time.Now())
	r := &scriptedRunner{clock: clk}
	r.script = func(job *Job) (Effects, error) {
		if w, ok := job.Wake.(wire.InboxWake); ok && w.Key == "bad" {
			if job.Attempt == 2 {
				panic("kaboom")
			}
			return nil, fmt.Errorf("attempt %d failed", job.Attempt)
		}
		return &testEffects{events: [][]byte{textEvent("ok")}}, nil
	}
	f := startDeliveryOn(t, clk, r, Options{MaxAttempts: 3, BaseBackoff: time.Second, MaxBackoff: time.Minute})
	url := f.spawn("failing")
	f.send(url, "bad", "queued", `1`)
	f.send(url, "good", "queued", `2`)
	retryAt := func(attempts int) time.Time {
		var at *time.Time
		testwait.Until(t, fmt.Sprintf("failure %d is recorded", attempts), func() bool {
			require.NoError(t, f.pool.QueryRow(context.Background(),
				`SELECT (SELECT retry_at FROM entity_wake WHERE entity_url = $1 AND attempts = $2)`, url, attempts).Scan(&at))
			return at != nil
		})
		return *at
	}
	first := clk.Now()
	require.Equal(t, first.Add(time.Second), retryAt(1), "the first retry waits BaseBackoff")
	require.Len(t, r.attempts(url, "bad"), 1, "no retry before the clock moves")
	clk.Advance(time.Second)
	require.Equal(t, first.Add(3*time.Second), retryAt(2), "the delay doubles")
	require.Len(t, r.attempts(url, "bad"), 2)
	clk.Advance(2 * time.Second)
	testwait.Until(t, "the next message is handled", func() bool { return len(r.attempts(url, "good")) == 1 })

	bad := r.attempts(url, "bad")
	require.Len(t, bad, 3)
	for i, x := range bad {
		require.Equal(t, i+1, x.attempt)
	}
	require.Equal(t, []time.Time{first, first.Add(time.Second), first.Add(3 * time.Second)},
		[]time.Time{bad[0].at, bad[1].at, bad[2].at}, "each attempt when its delay ended")

	st, err := StatusOf(context.Background(), f.pool, url)
	require.NoError(t, err)
	require.Len(t, st.Failures, 1)
	require.Equal(t, "bad", st.Failures[0].Key)
	require.Equal(t, "inbox", st.Failures[0].Kind)
	require.Equal(t, 3, st.Failures[0].Attempts)
	require.Equal(t, "attempt 3 failed", st.Failures[0].Error)
	require.EqualValues(t, 3, f.count(`SELECT count(*) FROM stream_messages m JOIN streams s ON s.id = m.stream_id
		WHERE s.path = $1 AND convert_from(m.data, 'UTF8')::json->>'type' = 'error'`, entitypath.Main(url)))
	for _, typ := range []string{"inbox", "run"} { // the message marked failed, and the unit's run
		require.EqualValues(t, 1, f.count(`SELECT count(*) FROM stream_messages m JOIN streams s ON s.id = m.stream_id
			WHERE s.path = $1 AND convert_from(m.data, 'UTF8')::json->'value'->>'status' = 'failed'
			AND convert_from(m.data, 'UTF8')::json->>'type' = $2`, entitypath.Main(url), typ), typ)
	}

	n, err := PurgeFailures(context.Background(), f.pool, time.Hour)
	require.NoError(t, err)
	require.Zero(t, n, "a fresh failure is kept")
	_, err = f.pool.Exec(context.Background(), `UPDATE wake_failures SET failed_at = now() - interval '2 hours'`)
	require.NoError(t, err)
	n, err = PurgeFailures(context.Background(), f.pool, time.Hour)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
}

// TestPausedHeldAndReleased: a paused message is held (and counted in the status) while
// later messages go on; releasing it delivers it with its stored value.
func TestPausedHeldAndReleased(t *testing.T) {
	r := &scriptedRunner{}
	f := startDelivery(t, r, Options{})
	url := f.spawn("held")
	f.send(url, "later", "paused", `"held \u0000 content"`)
	f.send(url, "now", "queued", `1`)
	testwait.Until(t, "the queued message goes on", func() bool { return slices.Contains(r.keys(url, "inbox"), "now") })
	testwait.Until(t, "the paused message is held", func() bool {
		st, err := StatusOf(context.Background(), f.pool, url)
		return err == nil && st.Paused == 1
	})
	e, err := f.registry.Get(context.Background(), url)
	require.NoError(t, err)
	mode := "queued"
	_, err = f.sender.PatchMessage(context.Background(), e, "later", &inbox.Patch{Mode: &mode})
	require.NoError(t, err)
	testwait.Until(t, "released", func() bool { return slices.Contains(r.keys(url, "inbox"), "later") })
	require.Equal(t, []string{"now", "later"}, r.keys(url, "inbox"))
}

// TestTimersFireOnce: a timer scheduled inside a transaction fires once when due, as a
// schedule wake with its payload. Due is a minute away on a test clock.
func TestTimersFireOnce(t *testing.T) {
	clk := clock.NewTest(time.Now())
	r := &scriptedRunner{}
	f := startDeliveryOn(t, clk, r, Options{})
	url := f.spawn("timed")
	due := clk.Now().Add(time.Minute)
	require.NoError(t, f.store.WithTx(context.Background(), func(ctx context.Context, tx *streamdb.Tx) error {
		return Schedule(ctx, tx, "tick-1", url, due, json.RawMessage(`{"n":1}`))
	}))
	f.d.PokeTimers()
	testwait.Until(t, "the entity's spawn is handled", func() bool { return len(r.keys(url, "spawn")) == 1 })
	require.Empty(t, r.keys(url, "schedule"), "not due yet")
	clk.Set(due)
	testwait.Until(t, "the timer fired", func() bool { return len(r.keys(url, "schedule")) == 1 })
	require.Zero(t, f.count(`SELECT count(*) FROM wake_timers WHERE entity_url = $1`, url), "the timer is gone")
	// once: a message sent now is handled after any second firing would have been
	f.send(url, "after", "queued", `1`)
	testwait.Until(t, "after", func() bool { return slices.Contains(r.keys(url, "inbox"), "after") })
	require.Equal(t, []string{"tick-1"}, r.keys(url, "schedule"))
}

// TestSignalsFollowTheStatusMachine: SIGSTOP pauses delivery (the worker lets go; sends
// with mode paused are held), a send resumes it, and SIGTERM to an entity with a handler
// ends with a stop after the handler saw the signal.
func TestSignalsFollowTheStatusMachine(t *testing.T) {
	r := &scriptedRunner{}
	f := startDelivery(t, r, Options{})
	url := f.spawn("signalled")
	ctx := context.Background()
	_, err := f.registry.Signal(ctx, url, entity.SignalRequest{Signal: entity.SIGSTOP})
	require.NoError(t, err)
	testwait.Until(t, "a paused entity is let go", func() bool { return f.row(url).holder == nil })
	f.send(url, "wake-up", "queued", `1`)
	testwait.Until(t, "the send resumed it", func() bool { return slices.Contains(r.keys(url, "inbox"), "wake-up") })

	_, err = f.registry.Signal(ctx, url, entity.SignalRequest{Signal: entity.SIGTERM})
	require.NoError(t, err)
	testwait.Until(t, "the entity stops after its handler saw SIGTERM", func() bool {
		e, err := f.registry.Get(ctx, url)
		return err == nil && e.Status == entity.StatusStopped
	})
	require.Contains(t, r.keys(url, "signal"), entity.SIGTERM)
	require.True(t, strings.HasSuffix(strings.Join(f.texts(url), ","), "ack SIGTERM"))
}

// TestRefusedWritesCountAsAttempts: a run whose writes the database refuses is retried
// and given up on like a failing run, with the reason; the entity moves on.
func TestRefusedWritesCountAsAttempts(t *testing.T) {
	r := &scriptedRunner{}
	r.script = func(job *Job) (Effects, error) {
		if w, ok := job.Wake.(wire.InboxWake); ok && w.Key == "bad" {
			return &testEffects{extra: true, apply: func(ctx context.Context, tx *streamdb.Tx) error {
				_, err := tx.Exec(ctx, `INSERT INTO wake_timers (id, entity_url, due_at) VALUES ($1, $2, now())`, "nul\x00id", job.EntityURL)
				return err
			}}, nil
		}
		return &testEffects{events: [][]byte{textEvent("ok")}}, nil
	}
	f := startDelivery(t, r, Options{MaxAttempts: 2})
	url := f.spawn("refused")
	f.send(url, "bad", "queued", `1`)
	f.send(url, "good", "queued", `2`)
	testwait.Until(t, "the next message is handled", func() bool { return len(r.attempts(url, "good")) == 1 })
	require.Len(t, r.attempts(url, "bad"), 2)
	st, err := StatusOf(context.Background(), f.pool, url)
	require.NoError(t, err)
	require.Len(t, st.Failures, 1)
	require.True(t, strings.HasPrefix(st.Failures[0].Error, "the database refused what the handler wrote"), st.Failures[0].Error)
}
