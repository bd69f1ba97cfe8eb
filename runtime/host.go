package runtime

import (
	"context"
	"errors"

	"github.com/entityd/entityd/internal/schemas"
	"github.com/entityd/entityd/slashcmd"
)

// Host is what a Context asks when a handler reads or checks something beyond its own
// buffered writes: the server itself when the handler runs in the server (package
// hosted), or the server's HTTP API when it runs in another process (External). The
// handler's code is the same either way.
type Host interface {
	// Schemas compiles the state schemas WriteEvent validates against.
	Schemas() *schemas.Cache
	// CheckSend checks a send now, as the HTTP send path would; it may set s.To to the
	// target's canonical URL. Errors wrap ErrEntityNotFound or ErrNotRunning where
	// those apply.
	CheckSend(ctx context.Context, from string, s *Send) error
	// CheckEntity reports whether the entity at url exists (ErrEntityNotFound if not).
	CheckEntity(ctx context.Context, url string) error
	// LoadCommands loads the entity's slash commands for a change.
	LoadCommands(ctx context.Context, url string, def *EntityDefinition) (*slashcmd.Set, error)
}

var (
	// ErrEntityNotFound: no entity at the URL.
	ErrEntityNotFound = errors.New("entity not found")
	// ErrNotRunning: the entity stopped or was killed, and accepts no writes.
	ErrNotRunning = errors.New("entity is not accepting writes")
)
