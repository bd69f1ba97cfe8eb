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

	"github.com/entityd/entityd/acp"
)

// runACP is `entityd acp`: the Agent Client Protocol adapter an editor launches. It
// speaks JSON-RPC on stdin/stdout and HTTP to an entityd server, so it has flags of its
// own and needs no database; stdout is the protocol, so logs go to stderr only.
func runACP(args []string) int {
	fs := flag.NewFlagSet("entityd acp", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: entityd acp --entity <type>/<id> [--server URL] [--token T | --principal P] [--spawn] [--confirm-tools]")
		fmt.Fprintln(fs.Output(), "An ACP (Agent Client Protocol) agent over stdio that attaches new editor sessions to one entity;")
		fmt.Fprintln(fs.Output(), "session/list and session/load reach the other entities of its type too.")
		fs.PrintDefaults()
	}
	env := func(name, def string) string {
		if v, ok := os.LookupEnv(name); ok {
			return v
		}
		return def
	}
	entity := fs.String("entity", env("ENTITYD_ENTITY", ""), "the entity new sessions attach to, <type>/<id>; session/list lists its type ($ENTITYD_ENTITY)")
	server := fs.String("server", env("ENTITYD_URL", acp.DefaultServer), "the entityd server ($ENTITYD_URL)")
	token := fs.String("token", os.Getenv("ENTITYD_TOKEN"), "jwt mode: sent as Authorization: Bearer <token> ($ENTITYD_TOKEN)")
	principal := fs.String("principal", os.Getenv("ENTITYD_PRINCIPAL"), "dev mode: sent as the Electric-Principal header, kind:id ($ENTITYD_PRINCIPAL)")
	spawn := fs.Bool("spawn", false, "spawn the entity (no args) on session/new if it does not exist")
	confirmTools := fs.Bool("confirm-tools", false, "ask the editor before each call of a session's MCP tool (session/request_permission)")
	callTimeout := fs.Duration("mcp-call-timeout", 0, "bound on one MCP tool call (0: 5m)")
	logLevel := fs.String("log-level", env("ENTITYD_LOG_LEVEL", "info"), "log level: debug, info, warn, error ($ENTITYD_LOG_LEVEL)")
	logFormat := fs.String("log-format", "json", "log format on stderr: json or console")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "entityd acp: unexpected arguments:", fs.Args())
		return 2
	}
	typ, id, err := acp.ParseEntity(*entity)
	if err != nil {
		fmt.Fprintln(os.Stderr, "entityd acp: --entity:", err)
		return 2
	}
	log, err := newLogger(*logLevel, *logFormat) // zap's configs write to stderr
	if err != nil {
		fmt.Fprintln(os.Stderr, "entityd acp:", err)
		return 2
	}
	defer func() { _ = log.Sync() }()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = acp.Serve(ctx, acp.Options{Server: *server, EntityType: typ, EntityID: id, Token: *token,
		Principal: *principal, Spawn: *spawn, Version: buildVersion(), Logger: log.Named("acp"),
		ConfirmTools: *confirmTools, MCP: acp.MCPLimits{CallTimeout: *callTimeout}}, os.Stdin, os.Stdout)
	if err != nil {
		log.Error("entityd acp stopped with an error", zap.Error(err))
		return 1
	}
	return 0
}

// buildVersion is the main module's version as the build recorded it.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "dev"
}
