package main

import (
	"context"
	"encoding/json"

	"github.com/entityd/entityd/entity"
)

// loadDemo registers the demo entity types so that a fresh `make run` has something to
// spawn and talk to.
func loadDemo(ctx context.Context, registry *entity.Registry) error {
	t := &entity.Type{
		Name:        "assistant",
		Description: "Demo assistant: answers composer_input messages by describing how it read them",
		SlashCommands: json.RawMessage(`[
			{"name":"quickstart","description":"Show how to get started"},
			{"name":"search","description":"Search the workspace","arguments":[{"name":"query","type":"string","required":true,"description":"what to look for"}]},
			{"name":"pr-review","description":"Review a pull request","arguments":[{"name":"number","type":"number","required":true},{"name":"include_tests","type":"boolean"}]}
		]`),
	}
	if err := registry.Precompile(t); err != nil {
		return err
	}
	_, err := registry.RegisterType(ctx, t)
	return err
}
