package authz

import (
	"context"
	"sync"

	"github.com/entityd/entityd/internal/principal"
)

// users remembers the user principals this process has recorded in the users table (the
// reference's users, which Electric's web UI reads as a shape): each is inserted once
// per process, not on every request.
type users struct {
	mu   sync.Mutex
	seen map[string]bool
}

// maxUsersSeen bounds the memory: past it the set starts again (a few more inserts that
// change nothing).
const maxUsersSeen = 100_000

// NoteUser records a user principal in the users table the first time this process sees
// it. Other kinds are not users. A failure is returned and the principal is tried again
// on its next request.
func (c *Checker) NoteUser(ctx context.Context, p principal.Principal) error {
	if p.Kind != "user" {
		return nil
	}
	c.users.mu.Lock()
	known := c.users.seen[p.ID]
	c.users.mu.Unlock()
	if known {
		return nil
	}
	if _, err := c.db.Exec(ctx, sqlNoteUser, p.ID); err != nil {
		return err
	}
	c.users.mu.Lock()
	if c.users.seen == nil || len(c.users.seen) >= maxUsersSeen {
		c.users.seen = map[string]bool{}
	}
	c.users.seen[p.ID] = true
	c.users.mu.Unlock()
	return nil
}
