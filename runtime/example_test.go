package runtime_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/runtime"
	"github.com/entityd/entityd/server"
)

// runExample serves def on a fresh database, sends it the messages, and returns once
// done is closed (or after a minute). It stands in for `make run` in the examples.
func runExample(def runtime.EntityDefinition, id string, done <-chan struct{}, messages ...string) {
	dbURL, drop, err := pgtest.NewDatabase()
	if err != nil {
		fmt.Println("no database:", err)
		return
	}
	defer drop()
	ready := make(chan net.Addr, 1)
	ctx, cancel := context.WithCancel(context.Background())
	srv := server.New(server.Config{DatabaseURL: dbURL, Addr: "127.0.0.1:0", Logger: zap.NewNop(),
		Ready: func(a net.Addr) { ready <- a }}, def)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = srv.Run(ctx) }()
	defer func() { cancel(); <-stopped }()
	base := "http://" + (<-ready).String()
	entity := "/_electric/entities/" + def.Type + "/" + id
	post := func(method, path, body string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
		}
	}
	post(http.MethodPut, entity, `{}`)
	for _, m := range messages {
		post(http.MethodPost, entity+"/send", m)
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		fmt.Println("timed out")
	}
}

// An entity type is a name and a handler; the server wakes the handler once per unit of
// work, in stream order, and commits what it writes with the acknowledgement.
func ExampleEntityDefinition() {
	done := make(chan struct{})
	echo := runtime.EntityDefinition{
		Type:        "echo",
		Description: "answers every message",
		Handler: func(ctx *runtime.Context) error {
			msg, ok := ctx.Wake.(runtime.InboxWake)
			if !ok {
				return nil // the spawn wake
			}
			fmt.Printf("%s got %s\n", ctx.Entity.URL, msg.Payload)
			if msg.Key == "last" {
				defer close(done)
			}
			return ctx.WriteText("echo: " + string(msg.Payload))
		},
	}
	runExample(echo, "e1", done,
		`{"key":"first","payload":"hello"}`,
		`{"key":"last","payload":{"n":2}}`)
	// Output:
	// /echo/e1 got "hello"
	// /echo/e1 got {"n":2}
}

// A handler switches on the kind of wake: the entity's spawn, inbox messages (a
// composer_input among them, with its parsed nodes), signals, timers, observations.
func ExampleWake() {
	done := make(chan struct{})
	def := runtime.EntityDefinition{
		Type: "switcher",
		Handler: func(ctx *runtime.Context) error {
			switch w := ctx.Wake.(type) {
			case runtime.SpawnWake:
				fmt.Println("spawned")
			case runtime.InboxWake:
				if in, ok := w.ComposerInput(); ok {
					fmt.Printf("composer input %q with %d node(s)\n", in.Source, len(in.Nodes))
				} else {
					fmt.Printf("message %s of type %q\n", w.Key, w.Type)
				}
				if w.Key == "last" {
					close(done)
				}
			}
			return nil
		},
	}
	runExample(def, "s1", done,
		`{"key":"plain","payload":1}`,
		`{"key":"last","type":"composer_input","payload":{"source":"/review src","nodes":[{"kind":"slash_command","start":0,"end":7,"raw":"/review","name":"review"}]}}`)
	// Output:
	// spawned
	// message plain of type ""
	// composer input "/review src" with 1 node(s)
}

// A handler registers slash commands for the entity's picker; they commit with the run
// and appear in the entity's slash-command collection.
func ExampleSlashCommands() {
	done := make(chan struct{})
	def := runtime.EntityDefinition{
		Type: "picker",
		Handler: func(ctx *runtime.Context) error {
			if _, ok := ctx.Wake.(runtime.SpawnWake); ok {
				desc := "Summarize the thread"
				return ctx.SlashCommands.Register(runtime.SlashCommandRegistration{
					Definition: runtime.SlashCommand{Name: "summarize", Description: &desc},
					Owner:      "assistant",
				})
			}
			rows, err := ctx.SlashCommands.List()
			if err != nil {
				return err
			}
			for _, r := range rows {
				fmt.Printf("/%s (%s, owner %s): %s\n", r.Name, r.Source, *r.Owner, *r.Description)
			}
			close(done)
			return nil
		},
	}
	runExample(def, "p1", done, `{"key":"list","payload":null}`)
	// Output:
	// /summarize (dynamic, owner assistant): Summarize the thread
}
