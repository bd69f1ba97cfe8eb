package wake

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/clock"
	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/internal/schemas"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wire"
)

// fixture is a store and an entity registry on a fresh database, without a server.
type fixture struct {
	t        *testing.T
	pool     *pgxpool.Pool
	store    *streamdb.Store
	registry *entity.Registry
	typ      *entity.Type
}

// newFixture starts a store and a registry (with opts, when given) with type "t".
func newFixture(t *testing.T, opts ...entity.Options) *fixture { return newFixtureOn(t, nil, opts...) }

// newFixtureOn is newFixture on a store, and so dispatchers, that keep time with clk.
func newFixtureOn(t *testing.T, clk clock.Clock, opts ...entity.Options) *fixture {
	t.Helper()
	var o entity.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	pool := pgtest.Pool(t)
	store, err := streamdb.Open(context.Background(), pool, streamdb.Options{Clock: clk})
	require.NoError(t, err)
	t.Cleanup(store.Close)
	registry := entity.New(store, schemas.NewCache(), zap.NewNop(), o)
	typ, err := registry.RegisterType(context.Background(), &entity.Type{Name: "t"})
	require.NoError(t, err)
	return &fixture{t: t, pool: pool, store: store, registry: registry, typ: typ}
}

func (f *fixture) spawn(id string) string {
	f.t.Helper()
	res, err := f.registry.Spawn(context.Background(), f.typ, entity.SpawnRequest{Type: "t", InstanceID: id})
	require.NoError(f.t, err)
	return res.Entity.URL
}

// row is the delivery state of an entity.
type row struct {
	scanned, epoch int64
	holder         *string
	attempts       int
	consumed       []int64
}

func (f *fixture) row(url string) row {
	f.t.Helper()
	var r row
	require.NoError(f.t, f.pool.QueryRow(context.Background(), `SELECT scanned_seq, epoch, holder, attempts, consumed
		FROM entity_wake WHERE entity_url = $1`, url).Scan(&r.scanned, &r.epoch, &r.holder, &r.attempts, &r.consumed))
	return r
}

func (f *fixture) tail(url string) int64 {
	f.t.Helper()
	var n int64
	require.NoError(f.t, f.pool.QueryRow(context.Background(), `SELECT tail_seq FROM streams WHERE path = $1`, url+"/main").Scan(&n))
	return n
}

func (f *fixture) count(sql string, args ...any) int64 {
	f.t.Helper()
	var n int64
	require.NoError(f.t, f.pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// testEffects are a handler run's writes for driving acknowledgements directly.
type testEffects struct {
	events    [][]byte
	extra     bool
	apply     func(ctx context.Context, tx *streamdb.Tx) error
	committed int
}

func (e *testEffects) Events() [][]byte { return e.events }
func (e *testEffects) Extra() bool      { return e.extra }
func (e *testEffects) Apply(ctx context.Context, tx *streamdb.Tx) error {
	if e.apply == nil {
		return nil
	}
	return e.apply(ctx, tx)
}
func (e *testEffects) Committed() { e.committed++ }

func textEvent(text string) []byte {
	return wire.Event{Type: "text", Key: "text-" + text, Value: []byte(`{"text":"` + text + `"}`),
		Operation: wire.OpInsert, Timestamp: time.Now()}.Marshal()
}

// TestStaleClaimWritesNothing drives every write of a delivery (acknowledgement on the
// group-commit path and on the transactional path, skip, failure records) with a claim
// that another holder has since replaced: each is refused with ErrFenced and writes
// nothing. The current claim's writes go through (the control).
func TestStaleClaimWritesNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	url := f.spawn("a")
	source := f.spawn("source")
	d := New(f.store, nil, []string{"t"}, Options{})
	require.NoError(t, registerHolder(ctx, f.pool, d.holder, time.Hour, nil))
	got, err := claim(ctx, f.pool, d.holder, []string{url}, nil)
	require.NoError(t, err)
	require.Len(t, got, 1)
	ours := fence{url: url, holder: d.holder, epoch: got[0].epoch}

	// another process claims the entity (as after our lease lapsed)
	require.NoError(t, registerHolder(ctx, f.pool, "other", time.Hour, nil))
	_, err = f.pool.Exec(ctx, `UPDATE entity_wake SET epoch = epoch + 1, holder = 'other' WHERE entity_url = $1`, url)
	require.NoError(t, err)
	theirs := fence{url: url, holder: "other", epoch: ours.epoch + 1}

	stale := map[string]fence{
		"old claim":               ours,
		"old epoch, right holder": {url: url, holder: "other", epoch: ours.epoch},
		"right epoch, old holder": {url: url, holder: d.holder, epoch: theirs.epoch},
	}
	it := &item{seq: 1, wake: wire.SpawnWake{Args: []byte(`{}`)}, key: "entity-created"}
	scheduleTimer := func(id string) func(ctx context.Context, tx *streamdb.Tx) error {
		return func(ctx context.Context, tx *streamdb.Tx) error {
			return Schedule(ctx, tx, id, url, time.Now().Add(time.Hour), nil)
		}
	}
	writes := map[string]func(f fence) error{
		"acknowledge (group commit)": func(fc fence) error {
			return d.acknowledge(ctx, fc, &testEffects{events: [][]byte{textEvent("plain")}}, progress{scanned: 1})
		},
		"acknowledge (own transaction)": func(fc fence) error {
			return d.acknowledge(ctx, fc, &testEffects{events: [][]byte{textEvent("extra")}, extra: true,
				apply: scheduleTimer(fmt.Sprintf("timer-%d-%s", fc.epoch, fc.holder))}, progress{scanned: 1})
		},
		"skip": func(fc fence) error {
			return d.skip(ctx, fc, progress{scanned: 1, held: []wire.HeldOp{{Key: "h", Seq: 1, Value: []byte(`{}`)}}})
		},
		"retry record": func(fc fence) error {
			return d.recordFailure(ctx, fc, failure{it: it, err: errors.New("x"), attempt: 1, max: 3, retryAt: time.Now()})
		},
		"give-up record": func(fc fence) error {
			return d.recordFailure(ctx, fc, failure{it: it, err: errors.New("x"), attempt: 3, max: 3, giveUp: true,
				progress: progress{scanned: 1}})
		},
	}
	check := func(t *testing.T) {
		before, tail := f.row(url), f.tail(url)
		for wname, write := range writes {
			for fname, fc := range stale {
				err := write(fc)
				require.ErrorIs(t, err, ErrFenced, "%s with %s", wname, fname)
			}
		}
		require.Equal(t, before, f.row(url), "no delivery state changed")
		require.Equal(t, tail, f.tail(url), "nothing was appended")
		require.Zero(t, f.count(`SELECT count(*) FROM wake_timers`), "no timer")
		require.Zero(t, f.count(`SELECT count(*) FROM wake_failures`), "no failure record")
		require.Zero(t, f.count(`SELECT count(*) FROM inbox_held`), "no held message")
	}
	t.Run("unobserved", check)
	// an observed entity's acknowledgements take the transactional path (to notify)
	require.NoError(t, f.store.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		return Observe(ctx, tx, source, url, nil)
	}))
	t.Run("observed", check)
	require.Equal(t, int64(1), f.tail(source), "the observer was not woken by refused writes")

	// the current claim writes
	eff := &testEffects{events: [][]byte{textEvent("current")}, extra: true, apply: scheduleTimer("current-timer")}
	require.NoError(t, d.acknowledge(ctx, theirs, eff, progress{scanned: 1}))
	require.Equal(t, 1, eff.committed)
	r := f.row(url)
	require.EqualValues(t, 1, r.scanned)
	require.EqualValues(t, 1, f.count(`SELECT count(*) FROM wake_timers WHERE id = 'current-timer'`))
	require.Equal(t, int64(2), f.tail(url), "entity_created, the text")
	require.Equal(t, int64(2), f.tail(source), "the observer was woken")

	// a released entity (holder NULL) is fenced too
	require.NoError(t, release(ctx, f.pool, "other", url, theirs.epoch))
	require.ErrorIs(t, d.acknowledge(ctx, theirs, &testEffects{events: [][]byte{textEvent("late")}}, progress{scanned: 2}), ErrFenced)
	require.Equal(t, int64(2), f.tail(url))
}
