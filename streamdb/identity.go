package streamdb

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
)

// Identity is what never changes in a stream's life: its id and its recorded access.
// Callers decide who may append from it without reading the stream's row, and pass the
// id along (AppendRequest.StreamID) so that the append is refused if the path meanwhile
// names another stream.
type Identity struct {
	ID     int64
	Access Access
}

// maxIdentities bounds the cache; past it the cache starts over (a miss costs one
// indexed read).
const maxIdentities = 65_536

// identities caches Identity by path. An entry is never wrong in a way that matters:
// a stream deleted here is dropped at once, and one replaced through another process
// is caught by the id check of the append, whose caller then asks again (Forget).
type identities struct {
	mu     sync.Mutex
	byPath map[string]Identity
	pathOf map[int64]string
}

func (c *identities) get(path string) (Identity, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.byPath[path]
	return id, ok
}

func (c *identities) put(path string, id Identity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byPath == nil || len(c.byPath) >= maxIdentities {
		c.byPath, c.pathOf = map[string]Identity{}, map[int64]string{}
	}
	c.byPath[path] = id
	c.pathOf[id.ID] = path
}

func (c *identities) dropID(id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if path, ok := c.pathOf[id]; ok {
		delete(c.pathOf, id)
		if c.byPath[path].ID == id {
			delete(c.byPath, path)
		}
	}
}

func (c *identities) dropPath(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id, ok := c.byPath[path]; ok {
		delete(c.byPath, path)
		delete(c.pathOf, id.ID)
	}
}

// Identify returns the identity of the stream at path (ErrNotFound when there is none,
// ErrGone when it was deleted but forks keep it), from a cache.
func (s *Store) Identify(ctx context.Context, path string) (Identity, error) {
	if id, ok := s.idents.get(path); ok {
		return id, nil
	}
	row, err := queries.Identify(ctx, s.pool, path)
	if errors.Is(err, pgx.ErrNoRows) {
		return Identity{}, ErrNotFound
	}
	if err != nil {
		return Identity{}, fmt.Errorf("streamdb: identify stream: %w", err)
	}
	if row.SoftDeleted {
		return Identity{}, ErrGone
	}
	id := Identity{ID: row.ID, Access: Access{Kind: AccessKind(row.AccessKind), Owner: row.OwnerPrincipal, Entity: row.EntityURL}}
	s.idents.put(path, id)
	return id, nil
}

// Forget drops what the cache knows of path (after ErrStreamReplaced).
func (s *Store) Forget(path string) { s.idents.dropPath(path) }

// IdentityOf is the identity m records.
func IdentityOf(m *Meta) Identity { return Identity{ID: m.ID, Access: m.Access} }
