// Package hosted runs Go SDK handlers inside the server, and checks and commits what any
// handler wrote: the in-process Runner (a wake.Runner) applies a run's runtime.Effects in
// the transaction that acknowledges its wake, and Decode checks the effects a handler
// outside the server reports with its done callback, so both commit by the same rules.
// The SDK (package runtime) stands beside the engine; this package is where the two meet.
package hosted

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
	"github.com/entityd/entityd/runtime"
	"github.com/entityd/entityd/slashcmd/slashdb"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wake"
)

// Runner runs the handlers of a set of entity definitions in the server. It implements
// wake.Runner.
type Runner struct {
	registry *entity.Registry
	streams  *streamdb.Store
	sender   *inbox.Sender
	log      *zap.Logger
	// pokeTimers wakes the timer service after a run that set a timer commits.
	pokeTimers func()

	mu   sync.RWMutex
	defs map[string]*runtime.EntityDefinition
}

// New returns a Runner of defs over the server's registry, store and send path;
// pokeTimers (nil: none) is called after a run that set a timer commits.
func New(registry *entity.Registry, streams *streamdb.Store, sender *inbox.Sender, log *zap.Logger,
	pokeTimers func(), defs []runtime.EntityDefinition) (*Runner, error) {
	if log == nil {
		log = zap.NewNop()
	}
	if pokeTimers == nil {
		pokeTimers = func() {}
	}
	r := &Runner{registry: registry, streams: streams, sender: sender, log: log.Named("runtime"),
		defs: map[string]*runtime.EntityDefinition{}, pokeTimers: pokeTimers}
	for i := range defs {
		d := defs[i]
		if _, err := d.TypeJSON(); err != nil {
			return nil, err
		}
		if _, dup := r.defs[d.Type]; dup {
			return nil, fmt.Errorf("runtime: entity type %q is defined twice", d.Type)
		}
		r.defs[d.Type] = &d
	}
	return r, nil
}

// Types returns the defined entity types.
func (r *Runner) Types() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.defs))
	for t := range r.defs {
		out = append(out, t)
	}
	return out
}

// Register upserts the types of the definitions. A type whose stored definition is
// already identical is left alone (its revision does not move); a changed one is
// re-registered, which reconciles its static slash commands into existing entities.
func (r *Runner) Register(ctx context.Context) error {
	r.mu.RLock()
	defs := make([]*runtime.EntityDefinition, 0, len(r.defs))
	for _, d := range r.defs {
		defs = append(defs, d)
	}
	r.mu.RUnlock()
	for _, d := range defs {
		tj, err := d.TypeJSON()
		if err != nil {
			return err
		}
		t := &entity.Type{Name: d.Type, Description: d.Description, CreationSchema: tj.Creation,
			InboxSchemas: tj.InboxSchemas, StateSchemas: tj.StateSchemas, SlashCommands: tj.SlashCommands}
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
func (r *Runner) Handles(entityType string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.defs[entityType]
	return ok
}

// Run runs the handler of job's entity and returns what it wrote.
func (r *Runner) Run(ctx context.Context, job *wake.Job) (wake.Effects, error) {
	r.mu.RLock()
	def := r.defs[job.EntityType]
	r.mu.RUnlock()
	if def == nil {
		return nil, fmt.Errorf("runtime: no handler for entity type %q", job.EntityType)
	}
	eff, err := runtime.Invoke(ctx, r, r.log, def, runtime.Invocation{EntityURL: job.EntityURL,
		EntityType: job.EntityType, Wake: job.Wake, Seq: job.Seq, Attempt: job.Attempt, State: job.State, Steer: job.Steer})
	if err != nil {
		return nil, err
	}
	return &runEffects{r: r, url: job.EntityURL, eff: eff}, nil
}

// Commands is the slash-command service (for helpers outside handlers).
func (r *Runner) Commands() *slashdb.Service { return r.registry.Commands() }
