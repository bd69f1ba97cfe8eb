package api

import (
	"strings"

	"github.com/entityd/entityd/authz"
)

// ruleKind is what a route asks of its caller before its handler runs.
type ruleKind int

const (
	// rulePublic: anyone (health, the webhook signing keys).
	rulePublic ruleKind = iota
	// ruleToken: the credential is a capability the handler checks itself (a claim,
	// callback or write token); no principal is asked for, so the bearer token is
	// never mistaken for a JWT.
	ruleToken
	// rulePrincipal: any authenticated principal; the handler filters or checks more
	// (lists, runners, which check their owner).
	rulePrincipal
	// ruleAdmin: a privileged principal (system, or one of --admin-principals).
	ruleAdmin
	// ruleEntity: perm on the entity the {type}/{id} parameters name.
	ruleEntity
	// ruleType: perm on the type the {name} parameter names.
	ruleType
	// ruleSpawn: spawn on the type {type} (the parent's spawn is checked by the handler,
	// which reads the body).
	ruleSpawn
	// ruleRegister: registering a new type is open to any principal, updating one needs
	// manage (the handler reads the name from the body).
	ruleRegister
	// ruleStream: by what the stream recorded and what the request does (decideStream).
	ruleStream
)

type accessRule struct {
	kind ruleKind
	perm authz.Permission
}

var (
	public    = accessRule{kind: rulePublic}
	token     = accessRule{kind: ruleToken}
	anyone    = accessRule{kind: rulePrincipal}
	admin     = accessRule{kind: ruleAdmin}
	stream    = accessRule{kind: ruleStream}
	register  = accessRule{kind: ruleRegister}
	spawnRule = accessRule{kind: ruleSpawn, perm: authz.Spawn}
)

func onEntity(p authz.Permission) accessRule { return accessRule{kind: ruleEntity, perm: p} }
func onType(p authz.Permission) accessRule   { return accessRule{kind: ruleType, perm: p} }

// routeRules is every route's rule, by "METHOD pattern" (chi's route pattern; "*" for a
// route that takes every method). A route missing here is refused with a 500 and fails
// TestEveryRouteHasAnAccessRule: access is never granted by omission.
var routeRules = withDSPrefixes(map[string]accessRule{
	"GET /_electric/health": public,
	"GET /_electric/ready":  public,
	// Prometheus metrics: privileged principals (dev mode's default principal is one);
	// --debug-addr serves them too, off the public port.
	"GET /_electric/metrics":                                 admin,
	"GET /_electric/entity-types/":                           anyone, // filtered to the types the caller may spawn
	"POST /_electric/entity-types/":                          register,
	"GET /_electric/entity-types/{name}":                     onType(authz.Spawn),
	"DELETE /_electric/entity-types/{name}":                  onType(authz.Manage),
	"PATCH /_electric/entity-types/{name}/schemas":           onType(authz.Manage),
	"GET /_electric/entity-types/{name}/grants":              onType(authz.Manage),
	"POST /_electric/entity-types/{name}/grants":             onType(authz.Manage),
	"DELETE /_electric/entity-types/{name}/grants/{grantId}": onType(authz.Manage),

	"GET /_electric/entities/":                                     anyone, // filtered to what the caller may read
	"PUT /_electric/entities/{type}/{id}":                          spawnRule,
	"GET /_electric/entities/{type}/{id}":                          onEntity(authz.Read),
	"HEAD /_electric/entities/{type}/{id}":                         onEntity(authz.Read),
	"DELETE /_electric/entities/{type}/{id}":                       onEntity(authz.Delete),
	"POST /_electric/entities/{type}/{id}/send":                    onEntity(authz.Write),
	"POST /_electric/entities/{type}/{id}/signal":                  onEntity(authz.Signal),
	"POST /_electric/entities/{type}/{id}/fork":                    onEntity(authz.Fork),
	"PATCH /_electric/entities/{type}/{id}/inbox/{messageKey}":     onEntity(authz.Write),
	"DELETE /_electric/entities/{type}/{id}/inbox/{messageKey}":    onEntity(authz.Write),
	"POST /_electric/entities/{type}/{id}/tags/{tagKey}":           onEntity(authz.Write),
	"DELETE /_electric/entities/{type}/{id}/tags/{tagKey}":         onEntity(authz.Write),
	"GET /_electric/entities/{type}/{id}/wake":                     onEntity(authz.Read),
	"GET /_electric/entities/{type}/{id}/slash-commands":           onEntity(authz.Read),
	"PUT /_electric/entities/{type}/{id}/slash-commands/{name}":    onEntity(authz.Write),
	"DELETE /_electric/entities/{type}/{id}/slash-commands/{name}": onEntity(authz.Write),
	// Attachments and externally writable collections (the handler also checks the type's
	// allow-list of collections and operations).
	"POST /_electric/entities/{type}/{id}/attachments":              onEntity(authz.Write),
	"GET /_electric/entities/{type}/{id}/attachments/{attId}":       onEntity(authz.Read),
	"DELETE /_electric/entities/{type}/{id}/attachments/{attId}":    onEntity(authz.Write),
	"POST /_electric/entities/{type}/{id}/collections/{collection}": onEntity(authz.Write),
	// MCP (package mcpserve): reading the entity's prompts needs read; its send tool
	// checks write itself, per call.
	"GET /_electric/entities/{type}/{id}/mcp":                 onEntity(authz.Read),
	"POST /_electric/entities/{type}/{id}/mcp":                onEntity(authz.Read),
	"DELETE /_electric/entities/{type}/{id}/mcp":              onEntity(authz.Read),
	"GET /_electric/entities/{type}/{id}/grants":              onEntity(authz.Manage),
	"POST /_electric/entities/{type}/{id}/grants":             onEntity(authz.Manage),
	"DELETE /_electric/entities/{type}/{id}/grants/{grantId}": onEntity(authz.Manage),

	// Grants on plain streams (?stream=<path>): the stream's access decision asks for
	// manage on it.
	"GET /_electric/stream-grants/":             anyone,
	"POST /_electric/stream-grants/":            anyone,
	"DELETE /_electric/stream-grants/{grantId}": anyone,

	// Cross-entity wakes: the handler checks write on the subscriber and read on the
	// source (an entity's read, or the source stream's one access decision).
	"POST /_electric/wake":            anyone,
	"POST /_electric/wake/unregister": anyone,
	// Electric's wake callbacks: the claim token is the credential.
	"POST /_electric/wake-callbacks/{consumerId}": token,
	// Runners: any principal registers its own; the handlers check the owner.
	"POST /_electric/runners/":               anyone,
	"GET /_electric/runners/":                anyone,
	"GET /_electric/runners/{id}":            anyone,
	"GET /_electric/runners/{id}/health":     anyone,
	"POST /_electric/runners/{id}/heartbeat": anyone,
	"POST /_electric/runners/{id}/enable":    anyone,
	"POST /_electric/runners/{id}/disable":   anyone,
	"POST /_electric/runners/{id}/claim":     anyone,
	// Shapes: rows are scoped to what the caller may read.
	"GET /_electric/electric/v1/shape": anyone,

	// The live feed (package livefeed): a session is its opener's; each read in it runs
	// through the router with the caller's own credentials and meets that route's rule.
	"GET /_electric/feed/":                           anyone,
	"POST /_electric/feed/{session}/requests":        anyone,
	"DELETE /_electric/feed/{session}/requests/{id}": anyone,

	// The console's files: the page reads and writes through the API with the tab's
	// credentials, so serving it asks for none.
	"GET /_electric/console/":   public,
	"HEAD /_electric/console/":  public,
	"GET /_electric/console/*":  public,
	"HEAD /_electric/console/*": public,

	// Shared state (the runtime's mkdb/db()): the stream protocol under its own rule
	// (decideStream: the entities linked to it).
	"* /_electric/shared-state/{id}": stream,
	// Cron and tag observations: any principal ensures one; a tag-membership stream is
	// made for the caller and shows only what it may read.
	"POST /_electric/observations/cron/ensure-stream":     anyone,
	"POST /_electric/observations/entities/ensure-stream": anyone,
	// pgSync observations: any principal registers one of a table on the operator's
	// allow-list (the handler refuses others); its stream is read by that principal only
	// (decideStream); unobserving is a write to the entity.
	"POST /_electric/pg-sync/register": anyone,
	"* /_electric/pg-sync/*":           stream,
	"DELETE /_electric/entities/{type}/{id}/pg-sync-observations/{sourceRef}": onEntity(authz.Write),
	"PUT /_electric/entities/{type}/{id}/schedules/{scheduleId}":              onEntity(authz.Schedule),
	"DELETE /_electric/entities/{type}/{id}/schedules/{scheduleId}":           onEntity(authz.Schedule),

	// Webhook sources: any principal makes its own and lists those it may read; the
	// handlers check the source's owner (revoke) and readers (get). A delivery's
	// signature is its credential. Subscribing needs write on the entity and read on the
	// source (the handler).
	"GET /_electric/webhook-sources/":                                           anyone,
	"POST /_electric/webhook-sources/":                                          anyone,
	"GET /_electric/webhook-sources/{webhookKey}":                               anyone,
	"DELETE /_electric/webhook-sources/{webhookKey}":                            anyone,
	"POST /_electric/webhook-deliveries/{endpointKey}":                          token,
	"POST /_electric/webhook-deliveries/{endpointKey}/*":                        token,
	"PUT /_electric/entities/{type}/{id}/webhook-source-subscriptions/{sid}":    onEntity(authz.Write),
	"DELETE /_electric/entities/{type}/{id}/webhook-source-subscriptions/{sid}": onEntity(authz.Write),

	"* /*":           stream,
	"* /v1/stream/*": stream,
}, map[string]accessRule{
	"GET /jwks.json":  public,
	"HEAD /jwks.json": public,
	// A subscription can link any stream, and a wake's claim hands out a write token:
	// only privileged principals manage them (dispatch policies make them for types).
	"PUT /subscriptions/{id}/":             admin,
	"GET /subscriptions/{id}/":             admin,
	"DELETE /subscriptions/{id}/":          admin,
	"POST /subscriptions/{id}/streams":     admin,
	"DELETE /subscriptions/{id}/streams/*": admin,
	"POST /subscriptions/{id}/claim":       admin,
	"POST /subscriptions/{id}/callback":    token,
	"POST /subscriptions/{id}/ack":         token,
	"POST /subscriptions/{id}/release":     token,
})

// withDSPrefixes adds the subscription routes under both of their mounts.
func withDSPrefixes(rules, ds map[string]accessRule) map[string]accessRule {
	for k, v := range ds {
		method, pattern, _ := strings.Cut(k, " ")
		rules[method+" /__ds"+pattern] = v
		rules[method+" /v1/stream/__ds"+pattern] = v
	}
	return rules
}
