package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/internal/schemas"
	"github.com/entityd/entityd/slashcmd"
)

// host is what a Context asks when a handler reads or checks something beyond its own
// buffered writes: the server itself when the handler runs in the server (Runtime), or
// the server's HTTP API when it runs in another process (Remote). The handler's code is
// the same either way.
type host interface {
	// schemaCache compiles the state schemas WriteEvent validates against.
	schemaCache() *schemas.Cache
	// prepareSend checks a send to url now, as the HTTP send path would.
	prepareSend(ctx context.Context, url string, req *inbox.SendRequest) (pendingSend, error)
	// checkEntity reports whether the entity at url exists.
	checkEntity(ctx context.Context, url string) error
	// loadCommands loads the entity's slash commands for a change.
	loadCommands(ctx context.Context, url string, def *EntityDefinition) (*slashcmd.Set, error)
}

var _ host = (*Runtime)(nil)

func (r *Runtime) schemaCache() *schemas.Cache { return r.registry.Schemas() }

func (r *Runtime) prepareSend(ctx context.Context, url string, req *inbox.SendRequest) (pendingSend, error) {
	target, err := r.registry.Get(ctx, url)
	if err != nil {
		return pendingSend{}, fmt.Errorf("runtime: send to %s: %w", url, err)
	}
	if !target.Status.AcceptsWrites() {
		return pendingSend{}, fmt.Errorf("runtime: send to %s: %w", url, entity.ErrNotRunning)
	}
	t, err := r.registry.Type(ctx, target.Type)
	if err != nil && !errors.Is(err, entity.ErrTypeNotFound) {
		return pendingSend{}, err
	}
	if err := r.sender.Validate(target, t, req); err != nil {
		return pendingSend{}, fmt.Errorf("runtime: send to %s: %w", url, err)
	}
	return pendingSend{url: target.URL, req: req, prepared: r.sender.Prepare(req)}, nil
}

func (r *Runtime) checkEntity(ctx context.Context, url string) error {
	_, err := r.registry.Get(ctx, url)
	return err
}

func (r *Runtime) loadCommands(ctx context.Context, url string, _ *EntityDefinition) (*slashcmd.Set, error) {
	svc := r.registry.Commands()
	entries, err := svc.Load(ctx, url)
	if err != nil {
		return nil, err
	}
	return slashcmd.NewSet(entries, svc.Limits(), time.Now()), nil
}
