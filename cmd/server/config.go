package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/entityd/entityd/internal/quota"
	"github.com/entityd/entityd/pgsync"
)

// config is the server's configuration. Every setting has a flag and an environment
// variable (ENTITYD_*, plus DATABASE_URL); a flag given on the command line wins.
type config struct {
	Addr               string
	DatabaseURL        string
	DataDir            string
	LogLevel           string
	LogFormat          string
	MaxBodyBytes       int64
	MaxAppendBytes     int64
	MaxAttachmentBytes int64
	MaxInFlight        int64
	MaxPrincipalFlight int64
	WriteTimeout       time.Duration
	WriteMinRate       int64
	ComposerMaxSource  int
	ComposerMaxNodes   int
	LongPollTimeout    time.Duration
	SSELifetime        time.Duration
	ShutdownTimeout    time.Duration
	DBMaxConns         int
	CommitLanes        int
	Demo               bool
	AllowPrivateURLs   bool
	SkillsDir          string
	WakeLease          time.Duration
	WakeMaxAttempts    int
	WakeBackoff        time.Duration
	HandlerTimeout     time.Duration
	WebhookTimeout     time.Duration
	WebhookMax         int
	WebhookPerTarget   int
	WebhookQueued      int
	DebugAddr          string
	TLSCert, TLSKey    string
	MaxStreamPath      int
	BodyReadTimeout    time.Duration
	ReadHeaderTimeout  time.Duration
	IdleTimeout        time.Duration
	MaxConns           int
	DedupeWindow       time.Duration
	HistoryRetention   time.Duration
	ShapeLogRetention  time.Duration
	ShapeSnapshotRows  int
	SlashMaxOwnerBytes int
	SlashMaxOwners     int
	MCPMaxSessions     int
	MCPSessionTimeout  time.Duration
	FeedMaxSessions    int
	FeedMaxRequests    int
	Auth               string
	AllowInsecureDev   bool
	RequireDatabaseURL bool
	JWTKeys            string
	JWTIssuer          string
	JWTAudience        string
	JWTPrincipalClaim  string
	Admins             string
	CORSOrigins        string
	OutboundAllow      string
	PublicStreams      string
	QuotaTypes         int
	QuotaRunners       int
	QuotaSubscriptions int
	QuotaGrants        int
	QuotaStreams       int
	QuotaWakes         int
	QuotaSchedules     int
	QuotaObservations  int
	QuotaWebhookSrc    int
	// webhook sources (issue 29)
	WebhookSrcMaxBytes   int64
	WebhookSrcPerMinute  int64
	WebhookSrcBytesPerMi int64
	QuotaAttachments     int
	QuotaAttachBytes     int
	MaxTagsPerEntity     int
	PgSyncTables         string
	PgSyncSlot           string
	PgSyncPublication    string
	PgSyncSlotIdle       time.Duration
}

func loadConfig(args []string) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("entityd", flag.ContinueOnError)
	var envErrs []string
	str := func(p *string, name, env, def, usage string) {
		*p = def
		if v, ok := os.LookupEnv(env); ok {
			*p = v
		}
		fs.StringVar(p, name, *p, usage+" ($"+env+")")
	}
	i64 := func(p *int64, name, env string, def int64, usage string) {
		*p = def
		if v, ok := os.LookupEnv(env); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n <= 0 {
				envErrs = append(envErrs, env+" must be a positive integer")
			}
			*p = n
		}
		fs.Int64Var(p, name, *p, usage+" ($"+env+")")
	}
	// i64z is i64 where 0 is allowed (and means a default computed later).
	i64z := func(p *int64, name, env string, def int64, usage string) {
		*p = def
		if v, ok := os.LookupEnv(env); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n < 0 {
				envErrs = append(envErrs, env+" must be a non-negative integer")
			}
			*p = n
		}
		fs.Int64Var(p, name, *p, usage+" ($"+env+")")
	}
	num := func(p *int, name, env string, def int, usage string) {
		*p = def
		if v, ok := os.LookupEnv(env); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 0 {
				envErrs = append(envErrs, env+" must be a non-negative integer")
			}
			*p = n
		}
		fs.IntVar(p, name, *p, usage+" ($"+env+")")
	}
	dur := func(p *time.Duration, name, env string, def time.Duration, usage string) {
		*p = def
		if v, ok := os.LookupEnv(env); ok {
			d, err := time.ParseDuration(strings.TrimSpace(v))
			if err != nil || d <= 0 {
				envErrs = append(envErrs, env+" must be a positive duration such as 20s or 500ms")
			}
			*p = d
		}
		fs.DurationVar(p, name, *p, usage+" ($"+env+")")
	}
	// envBool reads a boolean setting whose flag is declared separately (a bool flag
	// takes no value, so the flag only ever turns it on).
	envBool := func(p *bool, env string) {
		if v, ok := os.LookupEnv(env); ok {
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				envErrs = append(envErrs, env+" must be true or false")
			}
			*p = b
		}
	}

	str(&c.Addr, "addr", "ENTITYD_ADDR", "127.0.0.1:4437", "listen address (dev mode refuses a non-loopback one unless ENTITYD_ALLOW_INSECURE_DEV=true)")
	str(&c.Auth, "auth", "ENTITYD_AUTH", "dev", "authentication: dev (the Electric-Principal header, loopback only) or jwt (Authorization: Bearer <JWT>)")
	str(&c.JWTKeys, "jwt-keys", "ENTITYD_JWT_KEYS", "", "jwt mode: a PEM public key file, a JWKS file, or an https JWKS URL")
	str(&c.JWTIssuer, "jwt-issuer", "ENTITYD_JWT_ISSUER", "", "jwt mode: the iss every token must carry (unchecked when empty)")
	str(&c.JWTAudience, "jwt-audience", "ENTITYD_JWT_AUDIENCE", "", "jwt mode: an aud every token must carry (unchecked when empty)")
	str(&c.JWTPrincipalClaim, "jwt-principal-claim", "ENTITYD_JWT_PRINCIPAL_CLAIM", "sub", "jwt mode: the claim that names the principal")
	str(&c.PgSyncTables, "pg-sync-tables", "ENTITYD_PG_SYNC_TABLES", "", "comma-separated tables (schema.table) that pgSync observations may watch; empty turns pgSync off (entityd's own tables are always refused)")
	str(&c.PgSyncSlot, "pg-sync-slot", "ENTITYD_PG_SYNC_SLOT", "", "pgSync's logical replication slot (default entityd_pgsync_<database>)")
	str(&c.PgSyncPublication, "pg-sync-publication", "ENTITYD_PG_SYNC_PUBLICATION", "entityd_pgsync", "the publication pgSync adds observed tables to")
	dur(&c.PgSyncSlotIdle, "pg-sync-slot-idle", "ENTITYD_PG_SYNC_SLOT_IDLE", 10*time.Minute, "drop pgSync's replication slot after this long without any observation, so that it holds no WAL")
	str(&c.Admins, "admin-principals", "ENTITYD_ADMIN_PRINCIPALS", "", "comma-separated principals (kind:id) that pass every permission check")
	str(&c.CORSOrigins, "cors-origins", "ENTITYD_CORS_ORIGINS", "", "comma-separated browser origins allowed to call the API (dev mode adds loopback origins)")
	str(&c.OutboundAllow, "outbound-allow", "ENTITYD_OUTBOUND_ALLOW", "", "comma-separated IPs and CIDR ranges that webhooks, serve endpoints and JWKS may reach whatever the other rules say")
	str(&c.PublicStreams, "public-stream-prefixes", "ENTITYD_PUBLIC_STREAM_PREFIXES", "", "comma-separated path prefixes (e.g. /public) under which plain streams are public: every authenticated principal may read and append; off when empty")
	q := quota.Defaults()
	num(&c.QuotaTypes, "quota-types", "ENTITYD_QUOTA_TYPES", q.Types, "most entity types one principal may register (429 beyond; 0: no limit)")
	num(&c.QuotaRunners, "quota-runners", "ENTITYD_QUOTA_RUNNERS", q.Runners, "most runners one principal may register (429 beyond; 0: no limit)")
	num(&c.QuotaSubscriptions, "quota-subscriptions", "ENTITYD_QUOTA_SUBSCRIPTIONS", q.Subscriptions, "most Durable Streams subscriptions one principal may create (429 beyond; 0: no limit)")
	num(&c.QuotaGrants, "quota-grants", "ENTITYD_QUOTA_GRANTS", q.Grants, "most grants one principal may make (429 beyond; 0: no limit)")
	num(&c.QuotaStreams, "quota-streams", "ENTITYD_QUOTA_STREAMS", q.Streams, "most plain streams one principal may own (429 beyond; 0: no limit)")
	num(&c.QuotaWakes, "quota-wake-registrations", "ENTITYD_QUOTA_WAKE_REGISTRATIONS", q.WakeRegistrations, "most cross-entity wake registrations one principal may make (429 beyond; 0: no limit)")
	num(&c.QuotaSchedules, "quota-schedules", "ENTITYD_QUOTA_SCHEDULES", q.Schedules, "most schedules (cron, pending future_send) one principal may make (429 beyond; 0: no limit)")
	num(&c.QuotaObservations, "quota-observations", "ENTITYD_QUOTA_OBSERVATIONS", q.Observations, "most tag observations made for one principal (429 beyond; 0: no limit)")
	num(&c.QuotaWebhookSrc, "quota-webhook-sources", "ENTITYD_QUOTA_WEBHOOK_SOURCES", q.WebhookSources, "most webhook sources one principal may own, revoked ones not counted (429 beyond; 0: no limit)")
	i64(&c.WebhookSrcMaxBytes, "webhook-delivery-max-bytes", "ENTITYD_WEBHOOK_DELIVERY_MAX_BYTES", 1<<20, "largest body of a delivery to a webhook source, in bytes (413 beyond; GitHub caps its payloads at 25 MB)")
	i64(&c.WebhookSrcPerMinute, "webhook-deliveries-per-minute", "ENTITYD_WEBHOOK_DELIVERIES_PER_MINUTE", 600, "deliveries one principal's webhook sources may take per minute, per process (429 beyond; 0: no limit)")
	i64(&c.WebhookSrcBytesPerMi, "webhook-delivery-bytes-per-minute", "ENTITYD_WEBHOOK_DELIVERY_BYTES_PER_MINUTE", 64<<20, "delivered bytes one principal's webhook sources may take per minute, per process (429 beyond; 0: no limit)")
	num(&c.QuotaAttachments, "quota-attachments", "ENTITYD_QUOTA_ATTACHMENTS", q.Attachments, "most attachments one principal may upload (429 beyond; 0: no limit)")
	num(&c.QuotaAttachBytes, "quota-attachment-bytes", "ENTITYD_QUOTA_ATTACHMENT_BYTES", q.AttachmentBytes, "most bytes of attachments one principal may upload (429 beyond; 0: no limit)")
	num(&c.MaxTagsPerEntity, "max-tags-per-entity", "ENTITYD_MAX_TAGS_PER_ENTITY", q.TagsPerEntity, "most tags on one entity (429 beyond; 0: no limit)")
	str(&c.DatabaseURL, "database-url", "DATABASE_URL", "", "Postgres URL; empty starts a private cluster under --data-dir")
	str(&c.DataDir, "data-dir", "ENTITYD_DATA_DIR", "./.entityd", "directory of the embedded Postgres cluster (used without DATABASE_URL)")
	str(&c.LogLevel, "log-level", "ENTITYD_LOG_LEVEL", "info", "log level: debug, info, warn, error")
	str(&c.LogFormat, "log-format", "ENTITYD_LOG_FORMAT", "console", "log format: console or json")
	i64(&c.MaxBodyBytes, "max-body-bytes", "ENTITYD_MAX_BODY_BYTES", 1<<20, "largest JSON request body of the entity API, in bytes (413 beyond)")
	i64(&c.MaxAppendBytes, "max-append-bytes", "ENTITYD_MAX_APPEND_BYTES", 8<<20, "largest stream append or create body, in bytes (413 beyond)")
	// Electric's own variable is honoured too (a deployment moved from the reference
	// keeps its limit); ENTITYD_MAX_ATTACHMENT_BYTES wins when both are set.
	attachEnv := "ENTITYD_MAX_ATTACHMENT_BYTES"
	if _, ok := os.LookupEnv(attachEnv); !ok {
		if _, ok := os.LookupEnv("ELECTRIC_AGENTS_MAX_ATTACHMENT_BYTES"); ok {
			attachEnv = "ELECTRIC_AGENTS_MAX_ATTACHMENT_BYTES"
		}
	}
	i64(&c.MaxAttachmentBytes, "max-attachment-bytes", attachEnv, 25<<20, "largest attachment upload (POST /_electric/entities/:type/:id/attachments), in bytes (413 beyond)")
	i64(&c.MaxInFlight, "max-bytes-in-flight", "ENTITYD_MAX_BYTES_IN_FLIGHT", 256<<20, "bytes the server holds for requests in flight (response bodies being written, request bodies being read and stored); beyond, requests wait up to 1s, then 503 + Retry-After")
	i64z(&c.MaxPrincipalFlight, "max-principal-bytes-in-flight", "ENTITYD_MAX_PRINCIPAL_BYTES_IN_FLIGHT", 0, "one principal's share of --max-bytes-in-flight (0: a quarter of it)")
	dur(&c.WriteTimeout, "write-timeout", "ENTITYD_WRITE_TIMEOUT", 30*time.Second, "how long writing a response may take, plus its size at --write-min-rate; a client that reads slower is disconnected (live reads: per event)")
	i64(&c.WriteMinRate, "write-min-rate", "ENTITYD_WRITE_MIN_RATE", 64<<10, "the slowest a client may read a response, in bytes per second, beyond --write-timeout")
	num(&c.ComposerMaxSource, "composer-max-source", "ENTITYD_COMPOSER_MAX_SOURCE", 100_000, "longest composer_input source, in UTF-16 code units (0: no limit)")
	num(&c.ComposerMaxNodes, "composer-max-nodes", "ENTITYD_COMPOSER_MAX_NODES", 1_000, "most composer_input nodes (0: no limit)")
	dur(&c.LongPollTimeout, "long-poll-timeout", "ENTITYD_LONG_POLL_TIMEOUT", 20*time.Second, "how long a live=long-poll read waits before 204, and a live shape request before it answers up to date")
	dur(&c.SSELifetime, "sse-lifetime", "ENTITYD_SSE_LIFETIME", 60*time.Second, "how long a live=sse response stays open")
	dur(&c.ShutdownTimeout, "shutdown-timeout", "ENTITYD_SHUTDOWN_TIMEOUT", 30*time.Second, "how long shutdown waits for requests in flight")
	num(&c.DBMaxConns, "db-max-conns", "ENTITYD_DB_MAX_CONNS", 32, "size of the Postgres connection pool")
	num(&c.CommitLanes, "commit-lanes", "ENTITYD_COMMIT_LANES", 2, "concurrent group-commit transactions for appends")
	dur(&c.WakeLease, "wake-lease", "ENTITYD_WAKE_LEASE", 10*time.Second, "how long a crashed process keeps its entities before others redeliver their work")
	num(&c.WakeMaxAttempts, "wake-max-attempts", "ENTITYD_WAKE_MAX_ATTEMPTS", 5, "handler attempts per message before it is marked failed (remote handlers: failed wakes in a row before their work is set aside)")
	dur(&c.WakeBackoff, "wake-backoff", "ENTITYD_WAKE_BACKOFF", 200*time.Millisecond, "delay before the first retry of a failed handler (doubles each time, up to 30s)")
	dur(&c.HandlerTimeout, "handler-timeout", "ENTITYD_HANDLER_TIMEOUT", 5*time.Minute, "longest a handler may run before its wake fails")
	dur(&c.WebhookTimeout, "webhook-timeout", "ENTITYD_WEBHOOK_TIMEOUT", 10*time.Second, "longest one webhook delivery may take; also how long one may wait for a free slot")
	num(&c.WebhookMax, "webhook-max-deliveries", "ENTITYD_WEBHOOK_MAX_DELIVERIES", 64, "most webhook requests in flight in this process")
	num(&c.WebhookPerTarget, "webhook-max-per-target", "ENTITYD_WEBHOOK_MAX_PER_TARGET", 8, "most webhook requests in flight to one target (scheme://host:port); a slow target holds only these")
	num(&c.WebhookQueued, "webhook-max-queued-per-target", "ENTITYD_WEBHOOK_MAX_QUEUED_PER_TARGET", 1024, "most webhook deliveries waiting for one target's slots; more are retried with backoff")
	num(&c.MaxStreamPath, "max-stream-path-bytes", "ENTITYD_MAX_STREAM_PATH_BYTES", 1024, "longest stream path, in bytes (400 beyond)")
	dur(&c.BodyReadTimeout, "body-read-timeout", "ENTITYD_BODY_READ_TIMEOUT", 30*time.Second, "how long a request body may take to arrive (408 beyond)")
	dur(&c.ReadHeaderTimeout, "read-header-timeout", "ENTITYD_READ_HEADER_TIMEOUT", 10*time.Second, "how long request headers may take to arrive")
	dur(&c.IdleTimeout, "idle-timeout", "ENTITYD_IDLE_TIMEOUT", 120*time.Second, "how long an idle keep-alive connection stays open")
	num(&c.MaxConns, "max-conns", "ENTITYD_MAX_CONNS", 0, "most open client connections; more wait their turn (0: the open-file limit less 256, at most 100000)")
	dur(&c.DedupeWindow, "dedupe-window", "ENTITYD_DEDUPE_WINDOW", 24*time.Hour, "how long send keys (idempotency keys) are remembered")
	dur(&c.HistoryRetention, "history-retention", "ENTITYD_HISTORY_RETENTION", 7*24*time.Hour, "how long finished delayed sends and wake failure records are kept")
	dur(&c.ShapeLogRetention, "shape-log-retention", "ENTITYD_SHAPE_LOG_RETENTION", 24*time.Hour, "how long the changes Electric shapes follow are kept (clients further behind refetch)")
	num(&c.ShapeSnapshotRows, "shape-snapshot-rows", "ENTITYD_SHAPE_SNAPSHOT_ROWS", 10000, "most rows in one response of an Electric shape's initial snapshot, at most 100000 (larger shapes come in pages)")
	num(&c.SlashMaxOwnerBytes, "slash-max-owner-bytes", "ENTITYD_SLASH_MAX_OWNER_BYTES", 256, "longest slash-command owner, in bytes, at most 1024 (422 beyond)")
	num(&c.SlashMaxOwners, "slash-max-owners", "ENTITYD_SLASH_MAX_OWNERS", 64, "most distinct slash-command owners per entity (422 beyond)")
	num(&c.MCPMaxSessions, "mcp-max-sessions-per-principal", "ENTITYD_MCP_MAX_SESSIONS_PER_PRINCIPAL", 100, "most MCP sessions one principal holds over all entities (429 beyond)")
	num(&c.FeedMaxSessions, "feed-max-sessions-per-principal", "ENTITYD_FEED_MAX_SESSIONS_PER_PRINCIPAL", 32, "most live feed sessions (GET /_electric/feed) one principal holds open (429 beyond)")
	num(&c.FeedMaxRequests, "feed-max-requests-per-session", "ENTITYD_FEED_MAX_REQUESTS_PER_SESSION", 256, "most reads in flight in one live feed session (429 beyond)")
	dur(&c.MCPSessionTimeout, "mcp-session-timeout", "ENTITYD_MCP_SESSION_TIMEOUT", 5*time.Minute, "how long an MCP session may make no request before it is closed")
	str(&c.TLSCert, "tls-cert", "ENTITYD_TLS_CERT", "", "PEM certificate (chain) file: serve HTTPS, and so HTTP/2 to browsers (with --tls-key)")
	str(&c.TLSKey, "tls-key", "ENTITYD_TLS_KEY", "", "PEM private key file of --tls-cert")
	str(&c.DebugAddr, "debug-addr", "ENTITYD_DEBUG_ADDR", "", "serve Go's profiler (pprof) on this address, e.g. 127.0.0.1:6060 (off when empty)")
	str(&c.SkillsDir, "skills-dir", "ENTITYD_SKILLS_DIR", "./skills", "SKILL.md files of the demo assistant")
	c.Demo = true
	envBool(&c.Demo, "ENTITYD_DEMO")
	envBool(&c.AllowInsecureDev, "ENTITYD_ALLOW_INSECURE_DEV")
	envBool(&c.RequireDatabaseURL, "ENTITYD_REQUIRE_DATABASE_URL")
	fs.BoolVar(&c.AllowInsecureDev, "allow-insecure-dev", c.AllowInsecureDev,
		"let dev mode listen on a non-loopback address, where anyone who can reach it acts as any principal ($ENTITYD_ALLOW_INSECURE_DEV)")
	noDemo := fs.Bool("no-demo", false, "do not load the demo entity types ($ENTITYD_DEMO=false)")
	envBool(&c.AllowPrivateURLs, "ENTITYD_ALLOW_PRIVATE_URLS")
	fs.BoolVar(&c.AllowPrivateURLs, "allow-private-urls", c.AllowPrivateURLs,
		"let webhooks and serve-endpoint discovery call private-network hosts ($ENTITYD_ALLOW_PRIVATE_URLS); off: https public hosts and http on this machine")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: entityd [flags]          serve\n       entityd migrate [flags]  apply database migrations and exit\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if len(envErrs) > 0 {
		return nil, fmt.Errorf("invalid environment: %s", strings.Join(envErrs, "; "))
	}
	if c.MaxStreamPath > 2048 {
		// Postgres indexes a text value of at most ~2,700 bytes; paths are indexed.
		return nil, fmt.Errorf("--max-stream-path-bytes must be at most 2048")
	}
	if c.SlashMaxOwnerBytes < 1 || c.SlashMaxOwnerBytes > 1024 {
		// owners are part of an index key; Postgres indexes at most ~2,700 bytes
		return nil, fmt.Errorf("--slash-max-owner-bytes must be between 1 and 1024")
	}
	if c.ShapeSnapshotRows < 1 || c.ShapeSnapshotRows > 100_000 {
		// one page is held in memory and sent as one response
		return nil, fmt.Errorf("--shape-snapshot-rows must be between 1 and 100000")
	}
	if c.FeedMaxSessions < 1 || c.FeedMaxRequests < 1 {
		return nil, fmt.Errorf("--feed-max-sessions-per-principal and --feed-max-requests-per-session must be at least 1")
	}
	if c.MCPMaxSessions < 1 {
		return nil, fmt.Errorf("--mcp-max-sessions-per-principal must be at least 1")
	}
	// entityd's own tables are never observable: refuse to start rather than expose them
	if _, err := pgsync.ParseAllowList(splitList(c.PgSyncTables)); err != nil {
		return nil, fmt.Errorf("--pg-sync-tables: %w", err)
	}
	if c.PgSyncSlotIdle <= 0 {
		return nil, fmt.Errorf("--pg-sync-slot-idle must be positive")
	}
	if c.SlashMaxOwners < 1 {
		return nil, fmt.Errorf("--slash-max-owners must be at least 1")
	}
	if c.WebhookMax < 1 || c.WebhookPerTarget < 1 || c.WebhookQueued < 1 {
		return nil, fmt.Errorf("--webhook-max-deliveries, --webhook-max-per-target and --webhook-max-queued-per-target must be at least 1")
	}
	if c.WebhookTimeout <= 0 {
		return nil, fmt.Errorf("--webhook-timeout must be positive")
	}
	if err := c.checkInFlight(); err != nil {
		return nil, err
	}
	if *noDemo {
		c.Demo = false
	}
	if c.RequireDatabaseURL && strings.TrimSpace(c.DatabaseURL) == "" {
		// The container image sets this: it has no PostgreSQL to start a private cluster
		// from, and "install postgresql" would be the wrong advice there.
		return nil, errors.New("DATABASE_URL is required here (a postgres:// URL of your database); " +
			"the private cluster that make run starts needs PostgreSQL installed on this machine")
	}
	return c, nil
}

// quotas are the per-principal quotas as configured; 0 turns one off.
func (c *config) quotas() quota.Limits {
	off := func(n int) int {
		if n == 0 {
			return -1
		}
		return n
	}
	return quota.Limits{Types: off(c.QuotaTypes), Runners: off(c.QuotaRunners), Subscriptions: off(c.QuotaSubscriptions),
		Grants: off(c.QuotaGrants), Streams: off(c.QuotaStreams), TagsPerEntity: off(c.MaxTagsPerEntity),
		WakeRegistrations: off(c.QuotaWakes), Schedules: off(c.QuotaSchedules), Observations: off(c.QuotaObservations),
		WebhookSources: off(c.QuotaWebhookSrc),
		Attachments:    off(c.QuotaAttachments), AttachmentBytes: off(c.QuotaAttachBytes)}
}

// publicStreamPrefixes are the configured public path prefixes, each a stream path.
func (c *config) publicStreamPrefixes() ([]string, error) {
	var out []string
	for _, p := range strings.Split(c.PublicStreams, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !strings.HasPrefix(p, "/") || p == "/" || strings.HasPrefix(p, "/_electric") || strings.HasPrefix(p, "/__ds") {
			return nil, fmt.Errorf("--public-stream-prefixes: %q must be a path such as /public (not / or a reserved prefix)", p)
		}
		out = append(out, strings.TrimSuffix(p, "/"))
	}
	return out, nil
}

// checkInFlight fills in the per-principal share of bytes in flight and refuses limits
// that contradict it: a body no principal could ever reserve would be refused with 413
// below the limit the operator set.
func (c *config) checkInFlight() error {
	if c.MaxPrincipalFlight == 0 {
		c.MaxPrincipalFlight = c.MaxInFlight / 4
	}
	if c.MaxPrincipalFlight > c.MaxInFlight {
		return errors.New("--max-principal-bytes-in-flight must be at most --max-bytes-in-flight")
	}
	// an append holds its body three times while it is stored (api.bodyCopies)
	if 3*c.MaxAppendBytes > c.MaxPrincipalFlight {
		return fmt.Errorf("--max-append-bytes (%d) needs three times its size per principal in flight: set --max-principal-bytes-in-flight "+
			"(or --max-bytes-in-flight, of which it is a quarter by default) to at least %d, or lower --max-append-bytes",
			c.MaxAppendBytes, 3*c.MaxAppendBytes)
	}
	if c.MaxBodyBytes > c.MaxPrincipalFlight {
		return fmt.Errorf("--max-body-bytes (%d) exceeds --max-principal-bytes-in-flight (%d)", c.MaxBodyBytes, c.MaxPrincipalFlight)
	}
	return nil
}
