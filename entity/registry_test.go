package entity_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/internal/schemas"
	"github.com/entityd/entityd/streamdb"
)

type env struct {
	t        *testing.T
	ctx      context.Context
	store    *streamdb.Store
	registry *entity.Registry
	handled  atomic.Bool // whether entities have handlers (SIGTERM then waits for them)
}

func newEnv(t *testing.T) *env {
	t.Helper()
	pool := pgtest.Pool(t)
	store, err := streamdb.Open(context.Background(), pool, streamdb.Options{})
	require.NoError(t, err)
	t.Cleanup(store.Close)
	e := &env{t: t, ctx: context.Background(), store: store}
	e.registry = entity.New(store, schemas.NewCache(), zap.NewNop(), entity.Options{Handled: func(string) bool { return e.handled.Load() }})
	return e
}

// eventTypes are the event types of the entity's main stream, in order.
func (e *env) eventTypes(url string) []string {
	e.t.Helper()
	m, err := e.store.Lookup(e.ctx, entitypath.Main(url))
	require.NoError(e.t, err)
	msgs, err := e.store.Read(e.ctx, m, streamdb.Start, m.Tail)
	require.NoError(e.t, err)
	var out []string
	for _, msg := range msgs {
		var ev struct{ Type string }
		require.NoError(e.t, json.Unmarshal(msg.Data, &ev))
		out = append(out, ev.Type)
	}
	return out
}

// TestTypesAndSpawn: registering a type is an upsert whose revision goes up; a spawn
// creates the entity row and its stream with entity_created; a second spawn at the same
// URL is ErrDuplicate and writes nothing; an unknown entity is ErrNotFound.
func TestTypesAndSpawn(t *testing.T) {
	e := newEnv(t)
	typ, err := e.registry.RegisterType(e.ctx, &entity.Type{Name: "note", Description: "d"})
	require.NoError(t, err)
	require.Equal(t, 1, typ.Revision)
	typ, err = e.registry.RegisterType(e.ctx, &entity.Type{Name: "note", Description: "d2"})
	require.NoError(t, err)
	require.Equal(t, 2, typ.Revision)
	got, err := e.registry.Type(e.ctx, "note")
	require.NoError(t, err)
	require.Equal(t, "d2", got.Description)

	res, err := e.registry.Spawn(e.ctx, typ, entity.SpawnRequest{Type: "note", InstanceID: "n1",
		Args: json.RawMessage(`{"a":"\u0000"}`), Tags: map[string]string{"k": "v"}})
	require.NoError(t, err)
	require.Equal(t, "/note/n1", res.Entity.URL)
	require.Equal(t, entity.StatusIdle, res.Entity.Status)
	require.Equal(t, []string{"entity_created"}, e.eventTypes("/note/n1")[:1])

	_, err = e.registry.Spawn(e.ctx, typ, entity.SpawnRequest{Type: "note", InstanceID: "n1"})
	require.ErrorIs(t, err, entity.ErrDuplicate)
	_, err = e.registry.Get(e.ctx, "/note/missing")
	require.ErrorIs(t, err, entity.ErrNotFound)
	fetched, err := e.registry.Get(e.ctx, "/note/n1")
	require.NoError(t, err)
	require.JSONEq(t, `{"a":"\u0000"}`, string(fetched.SpawnArgs), "args are kept as sent")
	require.Equal(t, map[string]string{"k": "v"}, fetched.Tags)

	require.NoError(t, e.registry.DeleteType(e.ctx, "note"))
	_, err = e.registry.Type(e.ctx, "note")
	require.ErrorIs(t, err, entity.ErrTypeNotFound)
}

// TestSignalsAndWrites: signals move the status through the machine with a signal event
// each; a killed entity refuses sends (SendAdmission), tags and further signals; a
// paused entity admits a send with the note that resumes it; FinishStop completes only a
// stopping entity.
func TestSignalsAndWrites(t *testing.T) {
	e := newEnv(t)
	typ, err := e.registry.RegisterType(e.ctx, &entity.Type{Name: "job", Description: "d"})
	require.NoError(t, err)
	spawn := func(id string) string {
		res, err := e.registry.Spawn(e.ctx, typ, entity.SpawnRequest{Type: "job", InstanceID: id})
		require.NoError(t, err)
		return res.Entity.URL
	}
	send := func(url string) (streamdb.AppendResult, error) {
		return e.store.Append(e.ctx, entity.SendTo(url, []byte(`{"type":"inbox","key":"k","value":{},"headers":{"operation":"insert"}}`)))
	}

	a := spawn("a")
	res, err := e.registry.Signal(e.ctx, a, entity.SignalRequest{Signal: entity.SIGSTOP})
	require.NoError(t, err)
	require.Equal(t, [2]entity.Status{entity.StatusIdle, entity.StatusPaused}, [2]entity.Status{res.PreviousState, res.NewState})
	admitted, err := send(a)
	require.NoError(t, err)
	require.Equal(t, string(entity.StatusPaused), admitted.Note, "a paused entity admits a send and says so")

	tag, err := e.registry.SetTag(e.ctx, a, "color", "blue")
	require.NoError(t, err)
	require.Equal(t, "blue", tag.Entity.Tags["color"])
	again, err := e.registry.SetTag(e.ctx, a, "color", "blue")
	require.NoError(t, err)
	require.Equal(t, "blue", again.Entity.Tags["color"])
	require.Equal(t, 1, count(e.eventTypes(a), "tags"), "setting the same value again writes nothing")

	res, err = e.registry.Signal(e.ctx, a, entity.SignalRequest{Signal: entity.SIGKILL})
	require.NoError(t, err)
	require.Equal(t, entity.StatusKilled, res.NewState)
	_, err = send(a)
	require.ErrorIs(t, err, entity.ErrNotRunning)
	_, err = e.registry.SetTag(e.ctx, a, "color", "red")
	require.ErrorIs(t, err, entity.ErrNotRunning)
	_, err = e.registry.Signal(e.ctx, a, entity.SignalRequest{Signal: entity.SIGCONT})
	var invalid *entity.InvalidSignalError
	require.ErrorAs(t, err, &invalid)
	require.Equal(t, entity.StatusKilled, invalid.Status)
	require.Equal(t, 2, count(e.eventTypes(a), "signal"), "stop, kill; nothing for the refused one")

	// SIGTERM with a handler: stopping, then FinishStop makes it stopped (once)
	e.handled.Store(true)
	b := spawn("b")
	res, err = e.registry.Signal(e.ctx, b, entity.SignalRequest{Signal: entity.SIGTERM})
	require.NoError(t, err)
	require.Equal(t, entity.StatusStopping, res.NewState)
	_, err = send(b)
	require.ErrorIs(t, err, entity.ErrNotRunning, "a stopping entity takes no new sends")
	for i, want := range []bool{true, false} {
		require.NoError(t, e.store.WithTx(e.ctx, func(ctx context.Context, tx *streamdb.Tx) error {
			stopped, err := entity.FinishStop(ctx, tx, b)
			require.Equal(t, want, stopped, "FinishStop call %d", i+1)
			return err
		}))
	}
	fetched, err := e.registry.Get(e.ctx, b)
	require.NoError(t, err)
	require.Equal(t, entity.StatusStopped, fetched.Status)
}

func count(ss []string, s string) int {
	n := 0
	for _, x := range ss {
		if x == s {
			n++
		}
	}
	return n
}
