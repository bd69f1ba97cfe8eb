// Package runtime is the Go SDK for entity authors: describe an entity type with an
// EntityDefinition, handle its wakes with a Handler, and use the Context to read the
// entity's state, manage its slash commands and write results.
//
//	def := runtime.EntityDefinition{
//		Type:        "echo",
//		Description: "Repeats what it is told",
//		Handler: func(ctx *runtime.Context) error {
//			if msg, ok := ctx.Wake.(runtime.InboxWake); ok {
//				return ctx.WriteText("you said " + string(msg.Payload))
//			}
//			return nil
//		},
//	}
//
// Everything a handler writes is buffered and committed in one transaction together with
// the acknowledgement of its wake: a handler that returns an error (or panics) leaves no
// trace but an error event, and the wake is retried.
package runtime

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/slashcmd"
	"github.com/entityd/entityd/wire"
)

// Handler handles one wake of an entity.
type Handler func(ctx *Context) error

// EntityDefinition describes an entity type and its handler.
type EntityDefinition struct {
	Type        string
	Description string
	// CreationSchema validates spawn args (JSON Schema draft-07; nil: anything).
	CreationSchema json.RawMessage
	// InboxSchemas validate typed messages by message type (nil: any type is accepted).
	InboxSchemas map[string]json.RawMessage
	// StateSchemas validate the custom events the handler writes with WriteEvent, by
	// event type (nil: any).
	StateSchemas map[string]json.RawMessage
	// SlashCommands are the type's static slash commands.
	SlashCommands []SlashCommand
	Handler       Handler
}

// SlashCommand is a slash-command definition (name without the leading slash).
type SlashCommand = slashcmd.Definition

// SlashCommandArgument is a declared argument of a slash command.
type SlashCommandArgument = slashcmd.Argument

// SlashCommandRow is an effective slash command as the slashCommands collection shows it.
type SlashCommandRow = slashcmd.Row

// SlashCommandRegistration is a dynamic registration of a command by an owner.
type SlashCommandRegistration = slashcmd.Registration

// The wake variants: ctx.Wake is exactly one of them.
type (
	Wake            = wire.Wake
	InboxWake       = wire.InboxWake
	SpawnWake       = wire.SpawnWake
	ScheduleWake    = wire.ScheduleWake
	ObservationWake = wire.ObservationWake
	ObservedEvent   = wire.ObservedEvent
	SignalWake      = wire.SignalWake
	RegisteredWake  = wire.RegisteredWake
	FinishedChild   = wire.FinishedChild
)

// TypeJSON is the definition as an entity-type registration's JSON members.
type TypeJSON struct {
	Creation, InboxSchemas, StateSchemas, SlashCommands json.RawMessage
}

// TypeJSON renders the definition as an entity-type registration, checking it.
func (d *EntityDefinition) TypeJSON() (TypeJSON, error) {
	if d.Type == "" || d.Handler == nil {
		return TypeJSON{}, fmt.Errorf("runtime: an entity definition needs a Type and a Handler")
	}
	t := TypeJSON{Creation: d.CreationSchema, InboxSchemas: schemaMap(d.InboxSchemas), StateSchemas: schemaMap(d.StateSchemas)}
	if d.SlashCommands != nil {
		if details := slashcmd.Validate(d.SlashCommands, "/slash_commands", slashcmd.DefaultLimits); details != nil {
			return TypeJSON{}, fmt.Errorf("runtime: %s: invalid slash commands: %v", d.Type, details)
		}
		var err error
		if t.SlashCommands, err = json.Marshal(d.SlashCommands); err != nil {
			return TypeJSON{}, err
		}
	}
	return t, nil
}

func schemaMap(m map[string]json.RawMessage) json.RawMessage {
	if m == nil {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var o rawjson.Object
	for _, k := range keys {
		o.Raw(k, m[k])
	}
	return o.Bytes()
}
