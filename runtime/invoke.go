package runtime

import (
	"context"

	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/wire"
)

// Invocation is one wake of an entity's handler, wherever the handler runs.
type Invocation struct {
	EntityURL  string
	EntityType string
	Wake       wire.Wake
	// Seq is the stream position of the event that made this wake (it names the run).
	Seq     int64
	Attempt int
	// State returns the entity's materialized state as of the start of the run.
	State func() (*wire.State, error)
	// Steer delivers steer-mode messages sent while the handler runs (nil: none).
	Steer <-chan wire.InboxWake
}

// Invoke runs def's handler for one wake with h answering its questions, and returns what
// it wrote (to be committed with the wake's acknowledgement), or the handler's error.
// The server's in-process runner and External both run handlers through it.
func Invoke(ctx context.Context, h Host, log *zap.Logger, def *EntityDefinition, inv Invocation) (*Effects, error) {
	if log == nil {
		log = zap.NewNop()
	}
	eff := &Effects{Stream: entitypath.Main(inv.EntityURL)}
	c := newContext(ctx, h, log, def, inv, eff)
	if err := def.Handler(c); err != nil {
		return nil, err
	}
	c.endRun()
	return eff, nil
}
