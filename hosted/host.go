package hosted

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/internal/schemas"
	"github.com/entityd/entityd/runtime"
	"github.com/entityd/entityd/slashcmd"
)

// The server answers a hosted handler's questions itself.
var _ runtime.Host = (*Runner)(nil)

// Schemas is the registry's compiled-schema cache.
func (r *Runner) Schemas() *schemas.Cache { return r.registry.Schemas() }

// CheckSend checks a send as the HTTP send path does (the target accepts writes, the
// message passes its schemas) and names the target by its canonical URL.
func (r *Runner) CheckSend(ctx context.Context, from string, s *runtime.Send) error {
	target, err := r.registry.Get(ctx, s.To)
	if errors.Is(err, entity.ErrNotFound) {
		return fmt.Errorf("runtime: send to %s: %w", s.To, runtime.ErrEntityNotFound)
	} else if err != nil {
		return fmt.Errorf("runtime: send to %s: %w", s.To, err)
	}
	if !target.Status.AcceptsWrites() {
		return fmt.Errorf("runtime: send to %s: %w", s.To, runtime.ErrNotRunning)
	}
	t, err := r.registry.Type(ctx, target.Type)
	if err != nil && !errors.Is(err, entity.ErrTypeNotFound) {
		return err
	}
	if err := r.sender.Validate(target, t, sendRequest(from, s)); err != nil {
		return fmt.Errorf("runtime: send to %s: %w", s.To, err)
	}
	s.To = target.URL
	return nil
}

// sendRequest is s as the send path takes it, from the entity at from.
func sendRequest(from string, s *runtime.Send) *inbox.SendRequest {
	return &inbox.SendRequest{Payload: s.Payload, Type: s.Type, Key: s.Key, Mode: s.Mode, Sender: from, FromAgent: from}
}

// CheckEntity reports whether the entity at url exists.
func (r *Runner) CheckEntity(ctx context.Context, url string) error {
	_, err := r.registry.Get(ctx, url)
	if errors.Is(err, entity.ErrNotFound) {
		return runtime.ErrEntityNotFound
	}
	return err
}

// LoadCommands loads the entity's stored slash commands.
func (r *Runner) LoadCommands(ctx context.Context, url string, _ *runtime.EntityDefinition) (*slashcmd.Set, error) {
	svc := r.registry.Commands()
	entries, err := svc.Load(ctx, url)
	if err != nil {
		return nil, err
	}
	return slashcmd.NewSet(entries, svc.Limits(), time.Now()), nil
}
