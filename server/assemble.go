package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/api/entityapi"
	"github.com/entityd/entityd/authz"
	"github.com/entityd/entityd/console"
	"github.com/entityd/entityd/dssub"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/external"
	"github.com/entityd/entityd/hosted"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/internal/authn"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/lifecycle"
	"github.com/entityd/entityd/internal/metrics"
	"github.com/entityd/entityd/internal/quota"
	"github.com/entityd/entityd/internal/schemas"
	"github.com/entityd/entityd/livefeed"
	"github.com/entityd/entityd/mcpserve"
	"github.com/entityd/entityd/membership"
	"github.com/entityd/entityd/pgsync"
	"github.com/entityd/entityd/schedule"
	"github.com/entityd/entityd/shapes"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wake"
	"github.com/entityd/entityd/wakereg"
	"github.com/entityd/entityd/webhooksrc"
)

// Assembly is an entityd's parts, wired.
type Assembly struct {
	Store     *streamdb.Store
	Registry  *entity.Registry
	Sender    *inbox.Sender
	Handlers  *hosted.Runner
	Wake      *wake.Dispatcher
	Subs      *dssub.Service
	API       *api.Server
	Shapes    *shapes.Service
	Schedules *schedule.Service
	Members   *membership.Service
	MCP       *mcpserve.Service
	// Feed multiplexes a browser's live reads over one connection (GET /_electric/feed).
	Feed   *livefeed.Service
	Wakes  *wakereg.Service
	PgSync *pgsync.Service

	grants   *authz.Store
	checker  *authz.Checker
	dispatch *external.Dispatch // where entities' wakes go when their handlers run outside
}

// Assemble builds every part of the server over a migrated pool, in dependency order,
// and starts the background services in services (which stops them in reverse order).
// Everything is wired through constructors and the few hooks below; nothing is started
// before what it depends on.
//
// Run uses it, and so does internal/testserver: tests run the server as it is wired.
func (s *Server) Assemble(ctx context.Context, pool *pgxpool.Pool, services *lifecycle.Group) (*Assembly, error) {
	a := &Assembly{}
	var err error
	storeOpts := s.cfg.Store
	storeOpts.Logger = s.log
	if s.cfg.CommitLanes > 0 {
		storeOpts.Lanes = s.cfg.CommitLanes
	}
	a.Store = streamdb.New(pool, storeOpts)
	// the store runs first (the registration of types below appends) and stops last
	if err := services.Start(ctx, a.Store); err != nil {
		return nil, err
	}
	quotas := s.cfg.API.Quotas
	if quotas == (quota.Limits{}) {
		quotas = quota.Defaults()
	}
	defined := map[string]bool{}
	for _, d := range s.defs {
		defined[d.Type] = true
	}
	// The registry's hooks act in its transactions through parts built after it (see
	// hooks.go); every part gets its collaborators in its constructor.
	a.Registry = entity.New(a.Store, schemas.NewCache(), s.log, entity.Options{
		CommandLimits: commandLimits(s.cfg.SlashCommands),
		TagLimit:      quotas.TagsPerEntity,
		Handled:       func(t string) bool { return defined[t] },
		OnEnd:         a.onEntityEnd,
		OnSpawn:       a.onSpawn,
	})
	a.grants, a.checker = authz.New(a.Store.DB(), a.Registry, s.cfg.Admins)
	jwt := s.cfg.API.Auth != nil && s.cfg.API.Auth.Mode() == authn.ModeJWT
	subOpts := s.cfg.Subscriptions
	subOpts.MaxPerPrincipal = quotas.Subscriptions
	if jwt {
		// whoever assembles a jwt-mode server (cmd/server, an embedding program, tests)
		// gets the rules strangers call for: no outbound request to this machine, and
		// no network detail in a subscription's visible status
		subOpts.Outbound.NoLoopback, subOpts.OpaqueErrors = true, true
	}
	subOpts.Enrich = external.Enricher(a.Registry) // webhook wakes of entity streams carry Electric's context
	subOpts.WakeEnded = external.WakeEnded         // and the entity is running until its wake ends
	attempts := s.cfg.Wake.MaxAttempts
	if attempts <= 0 {
		attempts = wake.DefaultMaxAttempts
	}
	subOpts.GiveUp = external.GiveUpRule(attempts) // the poison-message rule of in-process handlers
	a.Subs = dssub.New(a.Store, subOpts)
	a.dispatch = &external.Dispatch{Registry: a.Registry, Subs: a.Subs, Store: a.Store, Log: s.log}
	a.Sender = inbox.NewSender(a.Registry, a.Store, s.cfg.Limits, inbox.Hooks{
		BeforeSend: a.dispatch.BeforeSend, // link on send too, as the reference does
		OnUnpause:  func(url, typ string) { a.Wake.Poke(url, typ) },
	})
	if a.Handlers, err = hosted.New(a.Registry, a.Store, a.Sender, s.log, func() { a.Wake.PokeTimers() }, s.defs); err != nil {
		return nil, err
	}
	if err := a.Handlers.Register(ctx); err != nil {
		return nil, fmt.Errorf("register entity types: %w", err)
	}
	// the built-in type of principal entities exists before the API serves (Electric's
	// server makes sure of it at startup too)
	if _, err := a.Registry.EnsurePrincipalType(ctx); err != nil {
		return nil, fmt.Errorf("register the principal entity type: %w", err)
	}
	if err := a.Registry.ReconcileAll(ctx); err != nil {
		return nil, fmt.Errorf("reconcile static slash commands: %w", err)
	}
	a.Wake = wake.New(a.Store, a.Handlers, a.Handlers.Types(), s.cfg.Wake)
	a.Wakes = wakereg.New(a.Store, sourceEntity(a.Registry), wakereg.Options{Logger: s.log})
	a.Schedules = schedule.New(a.Store, a.Registry, a.Sender, s.log.Named("schedule"))
	a.Members = membership.New(a.Store, a.Registry, a.checker, s.log.Named("membership"))
	pgOpts := s.cfg.PgSync
	pgOpts.Logger = s.log
	if pgOpts.MaxPerPrincipal <= 0 {
		pgOpts.MaxPerPrincipal = quotas.Observations
	}
	if a.PgSync, err = pgsync.New(pool, a.Store, pgOpts); err != nil {
		return nil, err
	}
	apiCfg := s.cfg.API
	apiCfg.Quotas = quotas
	apiCfg.Outbound.NoLoopback = apiCfg.Outbound.NoLoopback || jwt
	apiCfg.ClaimTokens = a.Subs.CheckWriteToken // write tokens claimed through wake callbacks
	apiCfg.Grants, apiCfg.Checker = a.grants, a.checker
	entities := entityapi.New(entityapi.Deps{Streams: a.Store, Registry: a.Registry, Sender: a.Sender,
		Dispatcher: a.Wake, Wakes: a.Wakes, Schedules: a.Schedules, Members: a.Members,
		Webhooks: webhooksrc.New(a.Store, s.cfg.WebhookSources), PgSync: a.PgSync})
	a.API = api.New(apiCfg, s.log, api.Deps{Streams: a.Store, Registry: a.Registry, Wakes: a.Wakes,
		Entities: entities.Routes, Home: console.Prefix + "/"})
	a.API.MountRoutes(strings.TrimSuffix(dssub.ControlPrefix, "/"), a.Subs.Routes)
	a.API.MountRoutes(strings.TrimSuffix(dssub.AliasControlPrefix, "/"), a.Subs.Routes)
	a.API.MountRoutes(strings.TrimSuffix(external.CallbackPrefix, "/"), (&external.Callbacks{Subs: a.Subs,
		Effects: func(ctx context.Context, raw json.RawMessage) (dssub.Effects, error) {
			return a.Handlers.Decode(ctx, raw)
		}}).Routes)
	a.API.MountRoutes(external.RunnersPrefix, (&external.Runners{Store: a.Store, Subs: a.Subs, Registry: a.Registry,
		Privileged: a.checker.Privileged, MaxPerOwner: quotas.Runners,
		Origin: func(r *http.Request) string {
			if subOpts.PublicURL != "" {
				return subOpts.PublicURL
			}
			return httpx.RequestOrigin(r)
		}}).Routes)
	// a live shape request waits as long as a live stream read (ENTITYD_LONG_POLL_TIMEOUT)
	a.Shapes = shapes.New(a.Store.DB(), shapes.Options{Live: a.API.Live(), Logger: s.log, LongPoll: s.cfg.API.LongPollTimeout,
		Scope: shapeScope(a.checker, a.Registry), SnapshotRows: s.cfg.ShapeSnapshotRows})
	a.API.MountRoutes(shapes.Prefix, a.Shapes.Routes)
	mcpOpts := s.cfg.MCP
	mcpOpts.MaxBodyBytes, mcpOpts.Logger, mcpOpts.Live = s.cfg.API.MaxBodyBytes, s.log, a.API.Live()
	a.MCP = mcpserve.New(mcpserve.Deps{Entities: a.Registry, Streams: a.Store, Sender: a.Sender, Checker: a.checker, Pool: pool}, mcpOpts)
	a.API.MountRoutes(mcpserve.Prefix, a.MCP.Routes)
	web, err := console.New()
	if err != nil {
		return nil, fmt.Errorf("console: the binary carries no console bundle: %w", err)
	}
	a.API.MountRoutes(console.Prefix, web.Routes)
	// the feed runs its reads through the API's own handler (the one it is part of),
	// built on its first read
	feedOpts := s.cfg.Feed
	feedOpts.Logger, feedOpts.Live = s.log, a.API.Live()
	a.Feed = livefeed.New(a.API.Handler, feedOpts)
	a.API.MountRoutes(livefeed.Prefix, a.Feed.Routes)

	untrackPool, untrackParked := metrics.TrackPool(pool), metrics.TrackParked(a.API.ParkedSubscribers)
	untrackInFlight := metrics.TrackBytesInFlight(func() int { return int(a.API.BytesInFlight()) })
	jan := &janitor{cfg: s.cfg.Retention, pool: pool, store: a.Store, sender: a.Sender, shapes: a.Shapes, log: s.log.Named("retention")}
	for _, svc := range []struct {
		name string
		svc  lifecycle.Service
	}{
		{"metrics", lifecycle.Funcs{OnStop: func(context.Context) { untrackInFlight(); untrackParked(); untrackPool() }}},
		{"subscriptions", a.Subs},
		{"shapes", a.Shapes},
		{"mcp", a.MCP},
		{"wake delivery", a.Wake},
		{"cross-entity wakes", a.Wakes},
		{"delayed sends", &lifecycle.Loop{Run: func(ctx context.Context) { a.Sender.RunDelayed(ctx, s.log.Named("delayed")) }}},
		{"cron ticks", &lifecycle.Loop{Run: a.Schedules.RunCron}},
		{"tag observations", &lifecycle.Loop{Run: a.Members.Run}},
		{"pgSync replication", a.PgSync},
		{"retention", &lifecycle.Loop{Run: jan.run}},
	} {
		if err := services.Start(ctx, svc.svc); err != nil {
			return nil, fmt.Errorf("start %s: %w", svc.name, err)
		}
	}
	return a, nil
}

// sourceEntity tells wakereg a source entity's type and parent (for finished_child).
func sourceEntity(r *entity.Registry) wakereg.EntityInfo {
	return func(ctx context.Context, url string) (string, string, bool, error) {
		e, err := r.Known(ctx, url)
		if errors.Is(err, entity.ErrNotFound) {
			return "", "", false, nil
		}
		if err != nil {
			return "", "", false, err
		}
		return e.Type, deref(e.Parent), true, nil
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
