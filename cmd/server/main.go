// Command entityd is the entity runtime server: the Electric Agents entity API and the
// Durable Streams protocol over Postgres.
//
//	entityd [flags]          serve (see -h for flags and their ENTITYD_* variables)
//	entityd migrate [flags]  apply database migrations and exit
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/internal/pgcluster"
	"github.com/entityd/entityd/internal/schemas"
	"github.com/entityd/entityd/migrations"
	"github.com/entityd/entityd/streamdb"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
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

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, command, cfg, log); err != nil {
		log.Error("entityd stopped with an error", zap.Error(err))
		if errors.Is(err, pgcluster.ErrNotInstalled) {
			fmt.Fprintln(os.Stderr, "entityd:", pgcluster.ErrNotInstalled)
		}
		return 1
	}
	return 0
}

func serve(ctx context.Context, command string, cfg *config, log *zap.Logger) error {
	dbURL := cfg.DatabaseURL
	if dbURL == "" {
		cluster, err := pgcluster.Start(ctx, pgcluster.Options{DataDir: cfg.DataDir + "/pg", Database: "entityd",
			Logger: log, Fsync: true})
		if err != nil {
			return fmt.Errorf("embedded Postgres: %w", err)
		}
		defer func() {
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			if err := cluster.Stop(stopCtx); err != nil {
				log.Warn("embedded Postgres did not stop cleanly", zap.Error(err))
			}
		}()
		dbURL = cluster.URL()
		log.Info("using the embedded Postgres cluster", zap.String("data_dir", cfg.DataDir+"/pg"), zap.Int("port", cluster.Port()))
	}
	poolCfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	poolCfg.MaxConns = int32(cfg.DBMaxConns)
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return fmt.Errorf("connect to Postgres: %w", err)
	}
	defer pool.Close()
	if err := migrate(ctx, pool, log); err != nil {
		return err
	}
	if command == "migrate" {
		return nil
	}

	store, err := streamdb.Open(ctx, pool, streamdb.Options{Lanes: cfg.CommitLanes, Logger: log})
	if err != nil {
		return err
	}
	defer store.Close()
	registry := entity.New(store, schemas.NewCache(), log)
	sender := inbox.NewSender(registry, store, inbox.Limits{Composer: inbox.ComposerLimits{
		MaxSourceUnits: cfg.ComposerMaxSource, MaxNodes: cfg.ComposerMaxNodes}})
	if cfg.Demo {
		if err := loadDemo(ctx, registry); err != nil {
			return fmt.Errorf("load demo entity types: %w", err)
		}
		log.Info("demo entity types loaded (turn off with --no-demo)")
	}
	if err := registry.ReconcileAll(ctx); err != nil {
		return fmt.Errorf("reconcile static slash commands: %w", err)
	}
	apiServer := api.New(api.Config{MaxBodyBytes: cfg.MaxBodyBytes, MaxAppendBytes: cfg.MaxAppendBytes,
		LongPollTimeout: cfg.LongPollTimeout, SSELifetime: cfg.SSELifetime}, log, store, registry, sender)
	httpServer := &http.Server{
		Addr:              cfg.Addr,
		Handler:           apiServer.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          zap.NewStdLog(log.Named("http")),
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	log.Info("entityd listening", zap.String("addr", ln.Addr().String()))
	served := make(chan error, 1)
	go func() { served <- httpServer.Serve(ln) }()

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down", zap.Duration("timeout", cfg.ShutdownTimeout))
	apiServer.Shutdown() // end live reads now; they would otherwise hold shutdown up
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	if err := httpServer.Shutdown(shutdownCtx); err != nil {
		log.Warn("requests still in flight at shutdown", zap.Error(err))
	}
	return nil
}

func migrate(ctx context.Context, pool *pgxpool.Pool, log *zap.Logger) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("connect to Postgres: %w", err)
	}
	defer conn.Release()
	res, err := migrations.Up(ctx, conn.Conn())
	if err != nil {
		return err
	}
	if res.From != res.To {
		log.Info("database migrated", zap.Int32("from", res.From), zap.Int32("to", res.To))
	} else {
		log.Info("database schema is current", zap.Int32("version", res.To))
	}
	return nil
}
