package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/slashcmd/slashdb"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wake"
)

// Runtime runs the handlers of a set of entity definitions. It implements wake.Runner.
type Runtime struct {
	registry *entity.Registry
	streams  *streamdb.Store
	sender   *inbox.Sender
	log      *zap.Logger

	mu   sync.RWMutex
	defs map[string]*EntityDefinition
	// pokeTimers is set by the server once the dispatcher exists.
	pokeTimers func()
}

// New returns a Runtime over the server's registry, store and send path.
func New(registry *entity.Registry, streams *streamdb.Store, sender *inbox.Sender, log *zap.Logger) *Runtime {
	if log == nil {
		log = zap.NewNop()
	}
	return &Runtime{registry: registry, streams: streams, sender: sender, log: log.Named("runtime"),
		defs: map[string]*EntityDefinition{}, pokeTimers: func() {}}
}

// Define adds entity definitions. Call Register to upsert their types.
func (r *Runtime) Define(defs ...EntityDefinition) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range defs {
		d := defs[i]
		if _, _, _, _, err := d.typeJSON(); err != nil {
			return err
		}
		if _, dup := r.defs[d.Type]; dup {
			return fmt.Errorf("runtime: entity type %q is defined twice", d.Type)
		}
		r.defs[d.Type] = &d
	}
	return nil
}

// Types returns the defined entity types.
func (r *Runtime) Types() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.defs))
	for t := range r.defs {
		out = append(out, t)
	}
	return out
}

// SetTimerPoke lets the runtime wake the timer service after a Schedule commits.
func (r *Runtime) SetTimerPoke(fn func()) { r.pokeTimers = fn }

// Register upserts the types of the definitions. A type whose stored definition is
// already identical is left alone (its revision does not move); a changed one is
// re-registered, which reconciles its static slash commands into existing entities.
func (r *Runtime) Register(ctx context.Context) error {
	r.mu.RLock()
	defs := make([]*EntityDefinition, 0, len(r.defs))
	for _, d := range r.defs {
		defs = append(defs, d)
	}
	r.mu.RUnlock()
	for _, d := range defs {
		creation, inboxSchemas, stateSchemas, commands, err := d.typeJSON()
		if err != nil {
			return err
		}
		t := &entity.Type{Name: d.Type, Description: d.Description, CreationSchema: creation,
			InboxSchemas: inboxSchemas, StateSchemas: stateSchemas, SlashCommands: commands}
		if cur, err := r.registry.Type(ctx, d.Type); err == nil && sameType(cur, t) {
			continue
		} else if err != nil && !errors.Is(err, entity.ErrTypeNotFound) {
			return err
		}
		if err := r.registry.Precompile(t); err != nil {
			return fmt.Errorf("runtime: %s: %w", d.Type, err)
		}
		if _, err := r.registry.RegisterType(ctx, t); err != nil {
			return err
		}
		r.log.Info("entity type registered", zap.String("type", d.Type))
	}
	return nil
}

func sameType(a, b *entity.Type) bool {
	eq := func(x, y json.RawMessage) bool {
		if x == nil || y == nil {
			return x == nil && y == nil
		}
		var bx, by bytes.Buffer
		if json.Compact(&bx, x) != nil || json.Compact(&by, y) != nil {
			return false
		}
		return bytes.Equal(bx.Bytes(), by.Bytes())
	}
	return a.Description == b.Description && eq(a.CreationSchema, b.CreationSchema) && eq(a.InboxSchemas, b.InboxSchemas) &&
		eq(a.StateSchemas, b.StateSchemas) && eq(a.SlashCommands, b.SlashCommands) && a.ServeEndpoint == nil
}

// Handles reports whether entities of the type have a handler here.
func (r *Runtime) Handles(entityType string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.defs[entityType]
	return ok
}

// Run runs the handler of job's entity and returns what it wrote.
func (r *Runtime) Run(ctx context.Context, job *wake.Job) (wake.Effects, error) {
	r.mu.RLock()
	def := r.defs[job.EntityType]
	r.mu.RUnlock()
	if def == nil {
		return nil, fmt.Errorf("runtime: no handler for entity type %q", job.EntityType)
	}
	c := r.newContext(ctx, def, job)
	if err := def.Handler(c); err != nil {
		return nil, err
	}
	c.endRun()
	return c.eff, nil
}

// Commands is the slash-command service (for helpers outside handlers).
func (r *Runtime) Commands() *slashdb.Service { return r.registry.Commands() }
