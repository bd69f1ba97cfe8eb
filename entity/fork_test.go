package entity_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/internal/schemas"
	"github.com/entityd/entityd/streamdb"
)

// TestForkLimit: a subtree with more entities than MaxEntities is refused before any
// copy is made, and leaves no fork lock behind.
func TestForkLimit(t *testing.T) {
	e := newEnv(t)
	typ, err := e.registry.RegisterType(e.ctx, &entity.Type{Name: "n", Description: "d"})
	require.NoError(t, err)
	_, err = e.registry.Spawn(e.ctx, typ, entity.SpawnRequest{Type: "n", InstanceID: "root"})
	require.NoError(t, err)
	for i := range 3 {
		_, err = e.registry.Spawn(e.ctx, typ, entity.SpawnRequest{Type: "n", InstanceID: "c" + strconv.Itoa(i), Parent: "/n/root"})
		require.NoError(t, err)
	}
	_, err = e.registry.Fork(e.ctx, entity.ForkRequest{Source: "/n/root", MaxEntities: 3})
	var tooLarge *entity.ForkTooLargeError
	require.ErrorAs(t, err, &tooLarge)
	require.Equal(t, 3, tooLarge.Limit)
	require.Equal(t, 0, e.forkLocks())

	res, err := e.registry.Fork(e.ctx, entity.ForkRequest{Source: "/n/root", MaxEntities: 4, InstanceID: "copy"})
	require.NoError(t, err)
	require.Len(t, res.Entities, 4)
	require.Equal(t, "/n/copy", res.Root.URL)
	require.Equal(t, 0, e.forkLocks(), "the copy's transaction removed the fork's locks")
}

// TestForkLocks: a live lock of another fork refuses a fork (ErrForkInProgress) and a
// send; a lapsed one (its fork's process died) is taken over.
func TestForkLocks(t *testing.T) {
	e := newEnv(t)
	typ, err := e.registry.RegisterType(e.ctx, &entity.Type{Name: "n", Description: "d"})
	require.NoError(t, err)
	_, err = e.registry.Spawn(e.ctx, typ, entity.SpawnRequest{Type: "n", InstanceID: "a"})
	require.NoError(t, err)

	_, err = e.store.DB().Exec(e.ctx, `INSERT INTO entity_fork_locks VALUES ('/n/a', 'other', now() + interval '1 hour')`)
	require.NoError(t, err)
	_, err = e.registry.Fork(e.ctx, entity.ForkRequest{Source: "/n/a"})
	require.ErrorIs(t, err, entity.ErrForkInProgress)
	_, err = e.store.Append(e.ctx, entity.SendTo("/n/a", []byte(`{"type":"inbox","key":"k","value":{},"headers":{"operation":"insert"}}`)))
	require.ErrorIs(t, err, entity.ErrForkInProgress)

	_, err = e.store.DB().Exec(e.ctx, `UPDATE entity_fork_locks SET expires_at = now() - interval '1 second'`)
	require.NoError(t, err)
	_, err = e.store.Append(e.ctx, entity.SendTo("/n/a", []byte(`{"type":"inbox","key":"k","value":{},"headers":{"operation":"insert"}}`)))
	require.NoError(t, err, "a lapsed lock refuses nothing")
	res, err := e.registry.Fork(e.ctx, entity.ForkRequest{Source: "/n/a"})
	require.NoError(t, err)
	require.Len(t, res.Entities, 1)
	require.Equal(t, 0, e.forkLocks())
}

func (e *env) forkLocks() int {
	e.t.Helper()
	var n int
	require.NoError(e.t, e.store.DB().QueryRow(e.ctx, `SELECT count(*) FROM entity_fork_locks`).Scan(&n))
	return n
}

// BenchmarkFork100k forks an entity whose stream holds 100,000 events: the whole stream
// (no pointer), at a pointer, and at the latest completed run. The copies read the
// source's messages through the Durable Streams fork, so no event is copied; only the
// anchor reads the stream (to find the run).
func BenchmarkFork100k(b *testing.B) {
	const events = 100_000
	pool := pgtest.Pool(b)
	store, err := streamdb.Open(context.Background(), pool, streamdb.Options{})
	require.NoError(b, err)
	b.Cleanup(store.Close)
	e := &env{ctx: context.Background(), store: store,
		registry: entity.New(store, schemas.NewCache(), zap.NewNop(), entity.Options{})}
	typ, err := e.registry.RegisterType(e.ctx, &entity.Type{Name: "chat", Description: "d"})
	require.NoError(b, err)
	_, err = e.registry.Spawn(e.ctx, typ, entity.SpawnRequest{Type: "chat", InstanceID: "big"})
	require.NoError(b, err)
	path := entitypath.Main("/chat/big")
	const batch = 5000
	for i := 0; i < events; i += batch {
		msgs := make([][]byte, 0, batch)
		for j := i; j < i+batch; j++ {
			ev := fmt.Sprintf(`{"type":"text","key":"t%d","value":{"text":"event number %d of a long conversation"},"headers":{"operation":"insert"}}`, j, j)
			if j == events-10 {
				ev = `{"type":"run","key":"r1","value":{"key":"r1","status":"completed"},"headers":{"operation":"update"}}`
			}
			msgs = append(msgs, []byte(ev))
		}
		_, err := e.store.Append(e.ctx, &streamdb.AppendRequest{Path: path, Messages: msgs})
		require.NoError(b, err)
	}
	m, err := e.store.Lookup(e.ctx, path)
	require.NoError(b, err)
	require.Greater(b, m.Tail.Seq, int64(events))
	var mid streamdb.Offset
	require.NoError(b, e.store.WithTx(e.ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		mid, err = tx.OffsetAfter(ctx, m.ID, events/2)
		return err
	}))
	midStr := mid.String()

	// a second entity of the same size with one child: its fork rewrites the child's
	// manifest entry, so it reads the parent's stream
	_, err = e.registry.Spawn(e.ctx, typ, entity.SpawnRequest{Type: "chat", InstanceID: "boss"})
	require.NoError(b, err)
	_, err = e.registry.Spawn(e.ctx, typ, entity.SpawnRequest{Type: "chat", InstanceID: "kid", Parent: "/chat/boss"})
	require.NoError(b, err)
	for i := 0; i < events; i += batch {
		msgs := make([][]byte, 0, batch)
		for j := i; j < i+batch; j++ {
			ev := fmt.Sprintf(`{"type":"text","key":"t%d","value":{"text":"event number %d of a long conversation"},"headers":{"operation":"insert"}}`, j, j)
			if j == 5 {
				ev = `{"type":"run","key":"r0","value":{"key":"r0","status":"completed"},"headers":{"operation":"update"}}`
			}
			if j == 10 {
				ev = `{"type":"manifest","key":"child:chat:kid","value":{"key":"child:chat:kid","kind":"child","id":"kid","entity_type":"chat","entity_url":"/chat/kid"},"headers":{"operation":"insert"}}`
			}
			msgs = append(msgs, []byte(ev))
		}
		_, err := e.store.Append(e.ctx, &streamdb.AppendRequest{Path: entitypath.Main("/chat/boss"), Messages: msgs})
		require.NoError(b, err)
	}

	for _, bc := range []struct {
		name string
		req  func() entity.ForkRequest
	}{
		{"head", func() entity.ForkRequest { return entity.ForkRequest{Source: "/chat/big"} }},
		{"pointer", func() entity.ForkRequest {
			return entity.ForkRequest{Source: "/chat/big", Pointer: &entity.ForkPointer{Offset: &midStr, Sub: 1000}}
		}},
		{"latest_completed_run", func() entity.ForkRequest {
			return entity.ForkRequest{Source: "/chat/big", LatestCompletedRun: true}
		}},
		{"head_with_child", func() entity.ForkRequest { return entity.ForkRequest{Source: "/chat/boss"} }},
		{"latest_completed_run_far_back", func() entity.ForkRequest {
			return entity.ForkRequest{Source: "/chat/boss", Pointer: nil, LatestCompletedRun: true}
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				res, err := e.registry.Fork(e.ctx, bc.req())
				require.NoError(b, err)
				require.NotEmpty(b, res.Entities)
			}
		})
	}
}
