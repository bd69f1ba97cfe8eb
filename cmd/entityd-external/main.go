// Command entityd-external serves the demo assistant (examples/assistant, the same code
// `make run` serves inside the server) from a process of its own, through the Go SDK's
// runtime.External: as a webhook handler the server calls, or as a pull-wake runner that
// needs no inbound connection.
//
//	entityd-external -server http://127.0.0.1:4437 -listen 127.0.0.1:4438   # webhook
//	entityd-external -server http://127.0.0.1:4437 -runner laptop           # runner
//
// It registers the assistant type with a dispatch policy pointing at itself, so
// entities spawned from then on are handled here. Run the server without its own
// assistant (--no-demo), or the two would register the same type.
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

	"go.uber.org/zap"

	"github.com/entityd/entityd/examples/assistant"
	"github.com/entityd/entityd/runtime"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "entityd-external:", err)
		os.Exit(1)
	}
}

func run() error {
	server := flag.String("server", envOr("ENTITYD_URL", "http://127.0.0.1:4437"), "entityd's base URL (ENTITYD_URL)")
	listen := flag.String("listen", "127.0.0.1:4438", "address of the webhook handler")
	public := flag.String("public-url", "", "the URL the server calls (default: http://<listen>/wake)")
	runner := flag.String("runner", "", "run as the pull-wake runner with this id instead of a webhook")
	skills := flag.String("skills-dir", envOr("ENTITYD_SKILLS_DIR", "./skills"), "SKILL.md files of the assistant")
	flag.Parse()

	log, err := zap.NewProduction()
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	ext, err := runtime.NewExternal(runtime.ExternalOptions{Server: *server, Log: log}, assistant.Definition(*skills))
	if err != nil {
		return err
	}
	if *runner != "" {
		return serveRunner(ctx, ext, *runner)
	}
	return serveWebhook(ctx, ext, *listen, *public)
}

func serveRunner(ctx context.Context, ext *runtime.External, id string) error {
	if _, err := ext.RegisterRunner(ctx, id); err != nil {
		return fmt.Errorf("register runner %s: %w", id, err)
	}
	if err := ext.RegisterTypes(ctx, runtime.Dispatch{RunnerID: id}); err != nil {
		return fmt.Errorf("register the assistant type: %w", err)
	}
	fmt.Printf("entityd-external: runner %s serving the assistant type\n", id)
	if err := ext.RunRunner(ctx, id); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func serveWebhook(ctx context.Context, ext *runtime.External, listen, public string) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	if public == "" {
		public = "http://" + ln.Addr().String() + "/wake"
	}
	mux := http.NewServeMux()
	mux.Handle("/wake", ext.Webhook(ctx))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := ext.RegisterTypes(ctx, runtime.Dispatch{WebhookURL: public}); err != nil {
		return fmt.Errorf("register the assistant type: %w", err)
	}
	fmt.Printf("entityd-external: webhook %s serving the assistant type\n", public)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
