package wake

import (
	"context"

	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wire"
)

// Job is one handler run.
type Job struct {
	EntityURL  string
	EntityType string
	Wake       wire.Wake
	// Seq is the position in the entity's main stream of the event that made this unit
	// of work (from 1): the units of an entity are delivered in this order, each is
	// committed at most once, so it names the run a handler's reply belongs to.
	Seq int64
	// Attempt counts runs of this unit of work, from 1.
	Attempt int
	// State returns the entity's materialized state (built on first use): its whole
	// stream as read so far, earlier runs' writes included.
	State func() (*wire.State, error)
	// Steer delivers steer-mode messages that arrive while the handler runs.
	Steer <-chan wire.InboxWake
}

// Effects are a handler run's writes, committed together with the wake's
// acknowledgement.
type Effects interface {
	// Events are the events the run appends to the entity's own stream.
	Events() [][]byte
	// Extra reports whether the run wrote anything besides its own events (sends to other
	// entities, slash commands, timers, observations): those go through Apply.
	Extra() bool
	// Apply writes everything besides the own events inside the acknowledgement's
	// transaction.
	Apply(ctx context.Context, tx *streamdb.Tx) error
	// Committed is called after the acknowledgement committed.
	Committed()
}

// Runner runs handlers: the runtime package implements it.
type Runner interface {
	// Handles reports whether entities of the type have a handler here.
	Handles(entityType string) bool
	// Run runs the handler for job and returns its effects; an error (or a panic, which
	// Run must turn into an error) means nothing the run wrote is kept.
	Run(ctx context.Context, job *Job) (Effects, error)
}
