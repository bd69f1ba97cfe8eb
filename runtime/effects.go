package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/slashcmd"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wake"
)

// effects buffers what a handler run writes until its acknowledgement commits.
type effects struct {
	rt           *Runtime
	url          string
	events       [][]byte
	sends        []pendingSend
	commandOps   []commandOp
	timers       []timer
	observations []observation
}

type pendingSend struct {
	url      string // the target entity
	req      *inbox.SendRequest
	prepared *inbox.Prepared // in the server only
}

type timer struct {
	id      string
	due     time.Time
	payload []byte
}

type observation struct {
	source string
	types  []string
	remove bool
}

var _ wake.Effects = (*effects)(nil)

func (e *effects) own(event []byte) { e.events = append(e.events, event) }

func (e *effects) Events() [][]byte { return e.events }

func (e *effects) Extra() bool {
	return len(e.sends) > 0 || len(e.commandOps) > 0 || len(e.timers) > 0 || len(e.observations) > 0
}

// Apply writes the run's other effects in the acknowledgement's transaction.
func (e *effects) Apply(ctx context.Context, tx *streamdb.Tx) error {
	if len(e.commandOps) > 0 {
		_, err := e.rt.registry.Commands().ApplyTx(ctx, tx, e.url, func(set *slashcmd.Set) error {
			for _, op := range e.commandOps {
				if err := op.apply(set); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("runtime: slash commands: %w", err)
		}
	}
	for _, s := range e.sends {
		req := entity.SendTo(s.url, s.prepared.Event)
		req.Dedupe = s.prepared.Dedupe
		_, err := tx.Append(ctx, req)
		var closed *streamdb.ClosedError
		switch {
		case errors.As(err, &closed), errors.Is(err, entity.ErrNotRunning):
			return fmt.Errorf("runtime: send to %s: %w", s.url, entity.ErrNotRunning)
		case err != nil:
			return fmt.Errorf("runtime: send to %s: %w", s.url, err)
		}
	}
	for _, t := range e.timers {
		if err := wake.Schedule(ctx, tx, t.id, e.url, t.due, t.payload); err != nil {
			return fmt.Errorf("runtime: schedule: %w", err)
		}
	}
	for _, o := range e.observations {
		var err error
		if o.remove {
			err = wake.Unobserve(ctx, tx, e.url, o.source)
		} else {
			err = wake.Observe(ctx, tx, e.url, o.source, o.types)
		}
		if err != nil {
			return fmt.Errorf("runtime: observe %s: %w", o.source, err)
		}
	}
	return nil
}

func (e *effects) Committed() {
	if len(e.timers) > 0 {
		e.rt.pokeTimers()
	}
}
