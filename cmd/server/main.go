// Command entityd is the entity runtime server: the Electric Agents entity API and the
// Durable Streams protocol over Postgres, with the demo entity types built in.
//
//	entityd [flags]          serve (see -h for flags and their ENTITYD_* variables)
//	entityd migrate [flags]  apply database migrations and exit
//	entityd acp [flags]      an ACP (Agent Client Protocol) agent over stdio for one entity,
//	                         talking HTTP to a server (see entityd acp -h; no database)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"go.uber.org/zap"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/dssub"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/internal/authn"
	"github.com/entityd/entityd/internal/pgcluster"
	"github.com/entityd/entityd/livefeed"
	"github.com/entityd/entityd/mcpserve"
	"github.com/entityd/entityd/pgsync"
	"github.com/entityd/entityd/runtime"
	"github.com/entityd/entityd/server"
	"github.com/entityd/entityd/slashcmd"
	"github.com/entityd/entityd/wake"
	"github.com/entityd/entityd/webhooksrc"
	"github.com/entityd/entityd/wire/composer"
)

func main() { os.Exit(run(os.Args[1:])) }

// defaultGCPercent trades memory for CPU: the server allocates many short-lived request
// buffers, and at Go's default (100) the collector took a tenth of its CPU under load.
// GOGC in the environment still wins.
const defaultGCPercent = 400

// defaultMemoryLimit bounds the heap that defaultGCPercent lets grow: with many entities
// cached (100,000 at most, about 65 MB live), a collector that waits for 5× the live heap
// would hold over 400 MB; near this limit it collects sooner instead. GOMEMLIMIT in the
// environment still wins.
const defaultMemoryLimit = 256 << 20

func run(args []string) int {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(defaultGCPercent)
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
	if len(args) > 0 && args[0] == "acp" {
		return runACP(args[1:])
	}
	command := "serve"
	if len(args) > 0 && args[0] == "migrate" {
		command, args = "migrate", args[1:]
	}
	cfg, err := loadConfig(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(os.Stderr, "entityd:", err)
		return 2
	}
	log, err := newLogger(cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		fmt.Fprintln(os.Stderr, "entityd:", err)
		return 2
	}
	defer func() { _ = log.Sync() }()
	sec, err := buildSecurity(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "entityd:", err)
		return 2
	}
	publicPrefixes, err := cfg.publicStreamPrefixes()
	if err != nil {
		fmt.Fprintln(os.Stderr, "entityd:", err)
		return 2
	}
	serveDebug(cfg.DebugAddr, log)

	var defs []runtime.EntityDefinition
	if cfg.Demo {
		defs = demoDefinitions(cfg.SkillsDir)
		log.Info("demo entity types enabled (turn off with --no-demo)")
	}
	srv := server.New(server.Config{
		Addr:        cfg.Addr,
		TLSCertFile: cfg.TLSCert,
		TLSKeyFile:  cfg.TLSKey,
		DatabaseURL: cfg.DatabaseURL,
		DataDir:     cfg.DataDir,
		DBMaxConns:  cfg.DBMaxConns,
		CommitLanes: cfg.CommitLanes,
		API: api.Config{MaxBodyBytes: cfg.MaxBodyBytes, MaxAppendBytes: cfg.MaxAppendBytes,
			MaxAttachmentBytes: cfg.MaxAttachmentBytes,
			LongPollTimeout:    cfg.LongPollTimeout, SSELifetime: cfg.SSELifetime,
			MaxStreamPathBytes: cfg.MaxStreamPath, BodyReadTimeout: cfg.BodyReadTimeout,
			MaxBytesInFlight: cfg.MaxInFlight, MaxPrincipalBytesInFlight: cfg.MaxPrincipalFlight,
			WriteTimeout: cfg.WriteTimeout, WriteMinRate: cfg.WriteMinRate,
			Outbound: sec.outbound, Auth: sec.auth, CORSOrigins: sec.cors, LoopbackOnly: sec.loopbackOnly,
			PublicStreamPrefixes: publicPrefixes, Quotas: cfg.quotas()},
		Subscriptions: dssub.Options{Outbound: sec.outbound, OpaqueErrors: sec.auth.Mode() == authn.ModeJWT,
			DeliveryTimeout: cfg.WebhookTimeout, MaxDeliveries: cfg.WebhookMax,
			MaxDeliveriesPerTarget: cfg.WebhookPerTarget, MaxQueuedPerTarget: cfg.WebhookQueued},
		WebhookSources: webhooksrc.Options{MaxDeliveryBytes: cfg.WebhookSrcMaxBytes,
			DeliveriesPerMinute: offNeg(cfg.WebhookSrcPerMinute), DeliveryBytesPerMinute: offNeg(cfg.WebhookSrcBytesPerMi)},
		Admins: sec.admins,
		HTTP: server.HTTPLimits{ReadHeaderTimeout: cfg.ReadHeaderTimeout, IdleTimeout: cfg.IdleTimeout,
			MaxConns: cfg.MaxConns},
		Retention: server.Retention{DedupeWindow: cfg.DedupeWindow, History: cfg.HistoryRetention,
			ShapeLog: cfg.ShapeLogRetention},
		ShapeSnapshotRows: cfg.ShapeSnapshotRows,
		PgSync: pgsync.Options{Tables: splitList(cfg.PgSyncTables), Slot: cfg.PgSyncSlot,
			Publication: cfg.PgSyncPublication, SlotIdle: cfg.PgSyncSlotIdle},
		MCP:           mcpserve.Options{MaxSessionsPerPrincipal: cfg.MCPMaxSessions, SessionTimeout: cfg.MCPSessionTimeout},
		Feed:          livefeed.Options{MaxSessionsPerPrincipal: cfg.FeedMaxSessions, MaxRequestsPerSession: cfg.FeedMaxRequests},
		SlashCommands: slashcmd.Limits{MaxOwnerBytes: cfg.SlashMaxOwnerBytes, MaxOwners: cfg.SlashMaxOwners},
		Limits:        inbox.Limits{Composer: composer.Limits{MaxSourceUnits: cfg.ComposerMaxSource, MaxNodes: cfg.ComposerMaxNodes}},
		Wake: wake.Options{Lease: cfg.WakeLease, MaxAttempts: cfg.WakeMaxAttempts, BaseBackoff: cfg.WakeBackoff,
			HandlerTimeout: cfg.HandlerTimeout},
		ShutdownTimeout: cfg.ShutdownTimeout,
		Logger:          log,
	}, defs...)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if command == "migrate" {
		err = srv.Migrate(ctx)
	} else {
		err = srv.Run(ctx)
	}
	if err != nil {
		// A missing PostgreSQL and a data directory owned by another server are the
		// newcomer's errors: one plain line that says what to do, not a log record.
		var inUse *pgcluster.InUseError
		switch {
		case errors.Is(err, pgcluster.ErrNotInstalled):
			fmt.Fprintln(os.Stderr, "entityd:", pgcluster.ErrNotInstalled)
		case errors.As(err, &inUse):
			fmt.Fprintln(os.Stderr, "entityd:", inUse)
		default:
			log.Error("entityd stopped with an error", zap.Error(err))
		}
		return 1
	}
	return 0
}

// offNeg maps a flag's 0 ("no limit") to the negative value that turns a budget off.
func offNeg(n int64) int64 {
	if n == 0 {
		return -1
	}
	return n
}
