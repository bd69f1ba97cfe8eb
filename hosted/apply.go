package hosted

import (
	"context"
	"errors"
	"fmt"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/runtime"
	"github.com/entityd/entityd/slashcmd"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wake"
)

// runEffects are one run's writes to the entity at url, checked, waiting for the
// acknowledgement's transaction.
type runEffects struct {
	r   *Runner
	url string
	eff *runtime.Effects
}

var _ wake.Effects = (*runEffects)(nil)

func (e *runEffects) Events() [][]byte {
	out := make([][]byte, len(e.eff.Events))
	for i, ev := range e.eff.Events {
		out[i] = ev
	}
	return out
}

func (e *runEffects) Extra() bool { return e.eff.Extra() }

// Apply writes the run's effects besides its events in the acknowledgement's transaction.
func (e *runEffects) Apply(ctx context.Context, tx *streamdb.Tx) error {
	eff := e.eff
	if len(eff.SlashCommands) > 0 {
		_, err := e.r.registry.Commands().ApplyTx(ctx, tx, e.url, func(set *slashcmd.Set) error {
			for _, op := range eff.SlashCommands {
				if err := op.Apply(set); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("runtime: slash commands: %w", err)
		}
	}
	for i := range eff.Sends {
		s := &eff.Sends[i]
		prepared := e.r.sender.Prepare(sendRequest(e.url, s))
		req := entity.SendTo(s.To, prepared.Event)
		req.Dedupe = prepared.Dedupe
		_, err := tx.Append(ctx, req)
		var closed *streamdb.ClosedError
		switch {
		case errors.As(err, &closed), errors.Is(err, entity.ErrNotRunning):
			return fmt.Errorf("runtime: send to %s: %w", s.To, entity.ErrNotRunning)
		case err != nil:
			return fmt.Errorf("runtime: send to %s: %w", s.To, err)
		}
	}
	for _, t := range eff.Timers {
		if err := wake.Schedule(ctx, tx, t.ID, e.url, t.DueAt, t.Payload); err != nil {
			return fmt.Errorf("runtime: schedule: %w", err)
		}
	}
	for _, o := range eff.Observations {
		var err error
		if o.Remove {
			err = wake.Unobserve(ctx, tx, e.url, o.Source)
		} else {
			err = wake.Observe(ctx, tx, e.url, o.Source, o.Types)
		}
		if err != nil {
			return fmt.Errorf("runtime: observe %s: %w", o.Source, err)
		}
	}
	return nil
}

func (e *runEffects) Committed() {
	if len(e.eff.Timers) > 0 {
		e.r.pokeTimers()
	}
}
