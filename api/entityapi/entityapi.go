// Package entityapi serves Electric's entity API under /_electric: entity types,
// spawning, sending, signals, inbox edits, tags, slash commands, grants on entities and
// types, schedules, observations, cross-entity wakes, attachments and externally
// writable collections. The Durable Streams protocol, admission (each route's access
// rule), the one access decision of every stream, the byte budget and the failure
// answers are the HTTP server's (package api); these handlers reach them through the
// api.Kit their routes are registered with.
package entityapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/attachment"
	"github.com/entityd/entityd/authz"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/outbound"
	"github.com/entityd/entityd/internal/ratelog"
	"github.com/entityd/entityd/membership"
	"github.com/entityd/entityd/pgsync"
	"github.com/entityd/entityd/schedule"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wake"
	"github.com/entityd/entityd/wakereg"
	"github.com/entityd/entityd/webhooksrc"
)

// Deps are the services the entity API calls; it holds no state of its own.
type Deps struct {
	Streams  *streamdb.Store
	Registry *entity.Registry
	Sender   *inbox.Sender
	// Dispatcher answers the wake status endpoint.
	Dispatcher *wake.Dispatcher
	// Wakes are Electric's cross-entity wakes (POST /_electric/wake, a spawn's wake).
	Wakes *wakereg.Service
	// Schedules are schedules and cron observations (nil: those routes answer 503).
	Schedules *schedule.Service
	// Members are tag observations (nil: that route answers 503).
	Members *membership.Service
	// Webhooks are webhook sources (nil: their routes answer 503, the list is empty).
	Webhooks *webhooksrc.Service
	// PgSync are pgSync observations of Postgres tables (nil: those routes answer 503).
	PgSync *pgsync.Service
}

// API is Electric's entity API. Its Routes go into api.Deps.Entities.
type API struct {
	streams    *streamdb.Store
	registry   *entity.Registry
	sender     *inbox.Sender
	dispatcher *wake.Dispatcher
	wakes      *wakereg.Service
	schedules  *schedule.Service
	members    *membership.Service
	webhooks   *webhooksrc.Service
	// attachments are entities' uploaded files (attachments.go), kept with the streams.
	attachments *attachment.Service
	pgsync      *pgsync.Service
}

// New returns the entity API over d.
func New(d Deps) *API {
	return &API{streams: d.Streams, registry: d.Registry, sender: d.Sender, dispatcher: d.Dispatcher,
		wakes: d.Wakes, schedules: d.Schedules, members: d.Members, webhooks: d.Webhooks,
		pgsync: d.PgSync, attachments: attachment.New(d.Streams)}
}

// handlers are the routes' handlers: the API's services and what they use of the HTTP
// server, fixed when the routes are registered.
type handlers struct {
	*API
	kit      api.Kit
	cfg      api.Config
	log      *zap.Logger
	grants   *authz.Store
	checker  *authz.Checker
	quotas   quotas
	outbound *outbound.Clients // serve-endpoint discovery
	// refusedDeliveries bounds the log lines of forged or unsigned webhook deliveries
	refusedDeliveries *ratelog.Limiter
}

// Routes registers the entity API on the server's /_electric router (an api.EntityRoutes).
func (a *API) Routes(r chi.Router, kit api.Kit, wrap func(httpx.HandlerFunc) http.HandlerFunc) {
	cfg := kit.Config()
	s := &handlers{API: a, kit: kit, cfg: cfg, log: kit.Log().Named("entities"), grants: kit.Grants(),
		checker: kit.Checker(), outbound: outbound.NewPolicyClients(cfg.Outbound), refusedDeliveries: &ratelog.Limiter{}}
	s.quotas = quotas{s: a, limits: cfg.Quotas}
	r.Route("/entity-types", func(r chi.Router) {
		r.Get("/", wrap(s.listTypes))
		r.Post("/", wrap(s.registerType))
		r.Get("/{name}", wrap(s.getType))
		r.Delete("/{name}", wrap(s.deleteType))
		r.Patch("/{name}/schemas", wrap(s.amendSchemas))
		r.Get("/{name}/grants", wrap(s.listTypeGrants))
		r.Post("/{name}/grants", wrap(s.addTypeGrant))
		r.Delete("/{name}/grants/{grantId}", wrap(s.revokeTypeGrant))
	})
	r.Route("/entities", func(r chi.Router) {
		r.Get("/", wrap(s.listEntities))
		r.Put("/{type}/{id}", wrap(s.spawn))
		r.Get("/{type}/{id}", wrap(s.getEntity))
		r.Head("/{type}/{id}", wrap(s.headEntity))
		r.Delete("/{type}/{id}", wrap(s.killEntity))
		r.Post("/{type}/{id}/send", wrap(s.send))
		r.Post("/{type}/{id}/signal", wrap(s.signal))
		r.Post("/{type}/{id}/fork", wrap(s.fork))
		r.Patch("/{type}/{id}/inbox/{messageKey}", wrap(s.patchInbox))
		r.Delete("/{type}/{id}/inbox/{messageKey}", wrap(s.deleteInbox))
		r.Post("/{type}/{id}/tags/{tagKey}", wrap(s.setTag))
		r.Delete("/{type}/{id}/tags/{tagKey}", wrap(s.deleteTag))
		r.Get("/{type}/{id}/wake", wrap(s.wakeStatus))
		r.Get("/{type}/{id}/slash-commands", wrap(s.listSlashCommands))
		r.Put("/{type}/{id}/slash-commands/{name}", wrap(s.putSlashCommand))
		r.Delete("/{type}/{id}/slash-commands/{name}", wrap(s.deleteSlashCommand))
		r.Get("/{type}/{id}/grants", wrap(s.listEntityGrants))
		r.Post("/{type}/{id}/grants", wrap(s.addEntityGrant))
		r.Delete("/{type}/{id}/grants/{grantId}", wrap(s.revokeEntityGrant))
		r.Put("/{type}/{id}/schedules/{scheduleId}", wrap(s.putSchedule))
		r.Delete("/{type}/{id}/schedules/{scheduleId}", wrap(s.deleteSchedule))
		r.Put("/{type}/{id}/webhook-source-subscriptions/{sid}", wrap(s.putWebhookSourceSubscription))
		r.Delete("/{type}/{id}/webhook-source-subscriptions/{sid}", wrap(s.deleteWebhookSourceSubscription))
		r.Post("/{type}/{id}/attachments", wrap(s.createAttachment))
		r.Get("/{type}/{id}/attachments/{attId}", wrap(s.readAttachment))
		r.Delete("/{type}/{id}/attachments/{attId}", wrap(s.deleteAttachment))
		r.Post("/{type}/{id}/collections/{collection}", wrap(s.writeCollection))
		r.Delete("/{type}/{id}/pg-sync-observations/{sourceRef}", wrap(s.deletePgSyncObservation))
	})
	// webhook sources (webhook_sources.go, webhook_deliveries.go)
	r.Route("/webhook-sources", func(r chi.Router) {
		r.Get("/", wrap(s.listWebhookSources))
		r.Post("/", wrap(s.createWebhookSource))
		r.Get("/{webhookKey}", wrap(s.getWebhookSource))
		r.Delete("/{webhookKey}", wrap(s.revokeWebhookSource))
	})
	r.Post("/webhook-deliveries/{endpointKey}", wrap(s.deliverWebhook))
	r.Post("/webhook-deliveries/{endpointKey}/*", wrap(s.deliverWebhook))
	// pgSync observations (pg_sync.go); their streams are read under /pg-sync/* (api)
	r.Post("/pg-sync/register", wrap(s.registerPgSync))
	r.Post("/observations/cron/ensure-stream", wrap(s.ensureCronStream))
	r.Post("/observations/entities/ensure-stream", wrap(s.ensureEntitiesStream))
	// Electric's cross-entity wakes (wake_registrations.go)
	r.Post("/wake", wrap(s.registerWake))
	r.Post("/wake/unregister", wrap(s.unregisterWake))
}
