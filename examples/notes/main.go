// Command notes is entityd with one entity type of your own: a notebook that keeps every
// "note" message and answers "/count" with how many notes it holds.
//
//	go run ./examples/notes                              (the embedded cluster in ./.entityd)
//	DATABASE_URL=postgres://... go run ./examples/notes
//
// It listens on 127.0.0.1:4437 like `make run`: stop that first. It takes over the
// `notebook` type of the docs/API.md walkthrough (its definition replaces the registered
// one).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"

	"github.com/entityd/entityd/runtime"
	"github.com/entityd/entityd/server"
)

func main() {
	notebook := runtime.EntityDefinition{
		Type:          "notebook",
		Description:   "Keeps notes",
		InboxSchemas:  map[string]json.RawMessage{"note": json.RawMessage(`{"type":"object","required":["text"]}`)},
		SlashCommands: []runtime.SlashCommand{{Name: "count"}},
		Handler: func(ctx *runtime.Context) error {
			msg, ok := ctx.Wake.(runtime.InboxWake)
			if !ok {
				return nil
			}
			if ci, ok := msg.ComposerInput(); ok && ci.HasSlashCommand("count") {
				return ctx.WriteText(fmt.Sprintf("%d notes", len(ctx.State().Keys("note"))))
			}
			return ctx.WriteEvent("note", msg.Key, "insert", msg.Payload)
		},
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// Loopback only: with no API.Auth the server is in dev mode, where anyone who reaches
	// the port may act as any principal (bin/entityd refuses dev mode elsewhere).
	cfg := server.Config{Addr: "127.0.0.1:4437", DatabaseURL: os.Getenv("DATABASE_URL")}
	if err := server.New(cfg, notebook).Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
