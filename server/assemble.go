package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/dssub"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/internal/lifecycle"
	"github.com/entityd/entityd/internal/metrics"
	"github.com/entityd/entityd/internal/schemas"
	"github.com/entityd/entityd/runtime"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wake"
)

// assembly is an entityd's parts, wired.
type assembly struct {
	store    *streamdb.Store
	registry *entity.Registry
	sender   *inbox.Sender
	runtime  *runtime.Runtime
	wake     *wake.Dispatcher
	subs     *dssub.Service
	api      *api.Server
}

// assemble builds every part of the server over a migrated pool, in dependency order,
// and starts the background services in services (which stops them in reverse order).
// Everything is wired through constructors and the few hooks below; nothing is started
// before what it depends on.
func (s *Server) assemble(ctx context.Context, pool *pgxpool.Pool, services *lifecycle.Group) (*assembly, error) {
	a := &assembly{}
	var err error
	if a.store, err = streamdb.Open(ctx, pool, streamdb.Options{Lanes: s.cfg.CommitLanes, Logger: s.log}); err != nil {
		return nil, err
	}
	// Open started the store's loops; the group closes it last.
	if err := services.Start(ctx, lifecycle.Funcs{OnStop: func(context.Context) { a.store.Close() }}); err != nil {
		return nil, err
	}
	a.registry = entity.New(a.store, schemas.NewCache(), s.log)
	a.registry.SetCommandLimits(commandLimits(s.cfg.SlashCommands))
	a.sender = inbox.NewSender(a.registry, a.store, s.cfg.Limits)
	a.runtime = runtime.New(a.registry, a.store, a.sender, s.log)
	if err := a.runtime.Define(s.defs...); err != nil {
		return nil, err
	}
	a.registry.SetHandled(a.runtime.Handles)
	a.registry.SetEndHook(wake.NotifyEnd)
	if err := a.runtime.Register(ctx); err != nil {
		return nil, fmt.Errorf("register entity types: %w", err)
	}
	if err := a.registry.ReconcileAll(ctx); err != nil {
		return nil, fmt.Errorf("reconcile static slash commands: %w", err)
	}
	a.wake = wake.New(a.store, a.runtime, a.runtime.Types(), s.cfg.Wake)
	a.runtime.SetTimerPoke(a.wake.PokeTimers)
	a.sender.OnUnpause(a.wake.Poke)
	a.api = api.New(s.cfg.API, s.log, a.store, a.registry, a.sender)
	a.api.SetDispatcher(a.wake)
	a.subs = dssub.New(a.store, s.cfg.Subscriptions)
	a.api.MountRoutes(strings.TrimSuffix(dssub.ControlPrefix, "/"), a.subs.Routes)

	untrackPool, untrackParked := metrics.TrackPool(pool), metrics.TrackParked(a.api.ParkedSubscribers)
	jan := &janitor{cfg: s.cfg.Retention, pool: pool, store: a.store, sender: a.sender, log: s.log.Named("retention")}
	for _, svc := range []struct {
		name string
		svc  lifecycle.Service
	}{
		{"metrics", lifecycle.Funcs{OnStop: func(context.Context) { untrackParked(); untrackPool() }}},
		{"subscriptions", a.subs},
		{"wake delivery", a.wake},
		{"delayed sends", &lifecycle.Loop{Run: func(ctx context.Context) { a.sender.RunDelayed(ctx, s.log.Named("delayed")) }}},
		{"retention", &lifecycle.Loop{Run: jan.run}},
	} {
		if err := services.Start(ctx, svc.svc); err != nil {
			return nil, fmt.Errorf("start %s: %w", svc.name, err)
		}
	}
	return a, nil
}
