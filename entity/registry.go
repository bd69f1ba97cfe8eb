package entity

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/coalesce"
	"github.com/entityd/entityd/internal/schemas"
	"github.com/entityd/entityd/slashcmd"
	"github.com/entityd/entityd/slashcmd/slashdb"
	"github.com/entityd/entityd/streamdb"
)

// Registry manages entity types and entities.
type Registry struct {
	pool     streamdb.DB
	streams  *streamdb.Store
	schemas  *schemas.Cache
	log      *zap.Logger
	types    *typeCache
	known    *entityCache
	commands *slashdb.Service
	// current reads entities afresh for many callers in one statement (Current)
	current *coalesce.Coalescer[string, *Entity]

	// handled reports whether a Go handler runs entities of a type here (SIGTERM then
	// lets the handler finish instead of stopping the entity at once).
	handled func(entityType string) bool
	// onEnd runs inside the transaction that stops or kills an entity.
	onEnd func(ctx context.Context, tx *streamdb.Tx, url, status string) error
	// onSpawn runs inside the transaction that spawns an entity; what it returns runs
	// after the commit.
	onSpawn func(ctx context.Context, tx *streamdb.Tx, e *Entity, t *Type) (after func(), err error)
	// maxTags bounds the tags of one entity (0: no bound).
	maxTags int
}

// TagLimit is the bound on one entity's tags (0: none).
func (r *Registry) TagLimit() int { return r.maxTags }

// Options configure a Registry. The hooks are how the server's other parts act inside
// the registry's transactions; they are given at construction, so a Registry never
// changes after it is built.
type Options struct {
	// CommandLimits bound slash commands (zero: slashcmd.DefaultLimits).
	CommandLimits slashcmd.Limits
	// TagLimit bounds the tags of one entity: a tag beyond it is ErrTooManyTags (0: none).
	TagLimit int
	// Handled reports whether entity types have handlers: for those, SIGTERM moves an
	// idle entity to "stopping" and the entity stops after its handler has been woken by
	// the signal (nil: none).
	Handled func(entityType string) bool
	// OnEnd runs inside the transaction that stops or kills an entity.
	OnEnd func(ctx context.Context, tx *streamdb.Tx, url, status string) error
	// OnSpawn runs inside the transaction that spawns an entity (after the entity row is
	// written); the function it returns runs once that has committed.
	OnSpawn func(ctx context.Context, tx *streamdb.Tx, e *Entity, t *Type) (func(), error)
}

// New returns a Registry over the store's database.
func New(streams *streamdb.Store, schemaCache *schemas.Cache, log *zap.Logger, opts Options) *Registry {
	if log == nil {
		log = zap.NewNop()
	}
	r := &Registry{
		pool:     streams.DB(),
		streams:  streams,
		schemas:  schemaCache,
		log:      log.Named("entity"),
		types:    &typeCache{ttl: typeCacheTTL, m: map[string]typeEntry{}},
		known:    &entityCache{max: 100_000, m: map[string]*Entity{}},
		commands: slashdb.NewService(streams, opts.CommandLimits),
		handled:  opts.Handled,
		onEnd:    opts.OnEnd,
		onSpawn:  opts.OnSpawn,
		maxTags:  opts.TagLimit,
	}
	r.current = coalesce.New(256, r.readMany)
	return r
}

// Commands is the slash-command service over the same store.
func (r *Registry) Commands() *slashdb.Service { return r.commands }

// Schemas is the compiled-schema cache shared with the send path.
func (r *Registry) Schemas() *schemas.Cache { return r.schemas }

// typeCacheTTL bounds how long another server process's re-registration of a type can
// go unseen here; registrations made through this process are seen at once.
const typeCacheTTL = 2 * time.Second

type typeCache struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]typeEntry
}

type typeEntry struct {
	t  *Type // nil: known not to exist
	at time.Time
}

func (c *typeCache) get(name string) (*Type, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[name]
	if !ok || time.Since(e.at) > c.ttl {
		return nil, false
	}
	return e.t, true
}

func (c *typeCache) put(t *Type) {
	c.mu.Lock()
	c.m[t.Name] = typeEntry{t: t, at: time.Now()}
	c.mu.Unlock()
}

func (c *typeCache) putMissing(name string) {
	c.mu.Lock()
	c.m[name] = typeEntry{at: time.Now()}
	c.mu.Unlock()
}

// entityCache remembers entities for the send path. What it serves never changes after
// spawn (URL, type, stream, schema snapshot); status is re-checked inside the append
// transaction, so a stale status here is harmless.
type entityCache struct {
	max int
	mu  sync.Mutex
	m   map[string]*Entity
}

func (c *entityCache) get(url string) *Entity {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[url]
}

func (c *entityCache) put(e *Entity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		for k := range c.m { // evict an arbitrary tenth; entities are cheap to reload
			delete(c.m, k)
			if len(c.m) < c.max*9/10 {
				break
			}
		}
	}
	c.m[e.URL] = e
}
