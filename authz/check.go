package authz

import (
	"context"
	"sync"
	"time"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/principal"
	"github.com/entityd/entityd/streamdb"
)

// Entities finds entities (for their creator and parent); entity.Registry's Known.
type Entities interface {
	Known(ctx context.Context, url string) (*entity.Entity, error)
}

// Checker answers permission questions. Answers are cached for cacheTTL: a grant made
// or revoked through this process takes effect at once (the cache is emptied), one made
// through another replica within cacheTTL.
type Checker struct {
	db       streamdb.DB
	entities Entities
	admins   map[string]bool
	now      func() time.Time

	mu    sync.Mutex
	cache map[cacheKey]cached
	gen   uint64

	users users
}

type cacheKey struct {
	who, target string
	perm        Permission
	typ         bool
}

type cached struct {
	ok bool
	at time.Time
}

const (
	cacheTTL     = 2 * time.Second
	maxCached    = 100_000
	maxAncestors = 32
)

// New returns the store and checker over db. admins are principals ("kind:id") that pass
// every check, like system principals.
func New(db streamdb.DB, entities Entities, admins []string) (*Store, *Checker) {
	c := &Checker{db: db, entities: entities, admins: map[string]bool{}, now: time.Now, cache: map[cacheKey]cached{}}
	for _, a := range admins {
		if p, ok := principal.Parse(a); ok {
			c.admins[p.String()] = true
		}
	}
	return &Store{db: db, checker: c}, c
}

// Privileged reports whether p passes every check.
func (c *Checker) Privileged(p principal.Principal) bool {
	return p.IsSystem() || c.admins[p.String()]
}

func (c *Checker) changed() {
	c.mu.Lock()
	clear(c.cache)
	c.gen++
	c.mu.Unlock()
}

func (c *Checker) lookup(k cacheKey) (ok, hit bool, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, found := c.cache[k]
	if found && c.now().Sub(v.at) < cacheTTL {
		return v.ok, true, c.gen
	}
	return false, false, c.gen
}

func (c *Checker) store(k cacheKey, ok bool, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return // grants changed while this answer was computed
	}
	if len(c.cache) >= maxCached {
		clear(c.cache)
	}
	c.cache[k] = cached{ok: ok, at: c.now()}
}

// Entity reports whether p has perm on e.
func (c *Checker) Entity(ctx context.Context, p principal.Principal, e *entity.Entity, perm Permission) (bool, error) {
	if c.Privileged(p) || (e.CreatedBy != nil && *e.CreatedBy == p.URL()) {
		return true, nil
	}
	k := cacheKey{who: p.String(), target: e.URL, perm: perm}
	if ok, hit, _ := c.lookup(k); hit {
		return ok, nil
	}
	_, _, gen := c.lookup(cacheKey{})
	ancestors, err := c.ancestors(ctx, e)
	if err != nil {
		return false, err
	}
	var ok bool
	if err := c.db.QueryRow(ctx, sqlEntityGranted, e.URL, ancestors, p.String(), p.Kind, string(perm)).Scan(&ok); err != nil {
		return false, err
	}
	c.store(k, ok, gen)
	return ok, nil
}

// ancestors are e's parent, its parent, ... (at most maxAncestors).
func (c *Checker) ancestors(ctx context.Context, e *entity.Entity) ([]string, error) {
	var out []string
	for cur := e; cur.Parent != nil && *cur.Parent != "" && len(out) < maxAncestors; {
		out = append(out, *cur.Parent)
		next, err := c.entities.Known(ctx, *cur.Parent)
		if err == entity.ErrNotFound {
			break
		}
		if err != nil {
			return nil, err
		}
		cur = next
	}
	return out, nil
}

// Type reports whether p has perm (spawn or manage) on type name.
func (c *Checker) Type(ctx context.Context, p principal.Principal, name string, perm Permission) (bool, error) {
	if c.Privileged(p) {
		return true, nil
	}
	k := cacheKey{who: p.String(), target: name, perm: perm, typ: true}
	ok, hit, gen := c.lookup(k)
	if hit {
		return ok, nil
	}
	if err := c.db.QueryRow(ctx, sqlTypeGranted, name, p.String(), p.Kind, string(perm)).Scan(&ok); err != nil {
		return false, err
	}
	c.store(k, ok, gen)
	return ok, nil
}

// EntityFilter returns a predicate for lists: whether p has perm on an entity, from one
// query of p's grants rather than one per entity.
func (c *Checker) EntityFilter(ctx context.Context, p principal.Principal, perm Permission) (func(context.Context, *entity.Entity) bool, error) {
	if c.Privileged(p) {
		return func(context.Context, *entity.Entity) bool { return true }, nil
	}
	rows, err := c.db.Query(ctx, sqlGrantsOf, p.String(), p.Kind, string(perm))
	if err != nil {
		return nil, err
	}
	self, below := map[string]bool{}, map[string]bool{}
	for rows.Next() {
		var url, propagation string
		if err := rows.Scan(&url, &propagation); err != nil {
			rows.Close()
			return nil, err
		}
		self[url] = true
		if propagation == "descendants" {
			below[url] = true
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	me := p.URL()
	return func(ctx context.Context, e *entity.Entity) bool {
		if (e.CreatedBy != nil && *e.CreatedBy == me) || self[e.URL] {
			return true
		}
		if len(below) == 0 {
			return false
		}
		ancestors, err := c.ancestors(ctx, e)
		if err != nil {
			return false
		}
		for _, a := range ancestors {
			if below[a] {
				return true
			}
		}
		return false
	}, nil
}

// TypeFilter returns a predicate for type lists: whether p has perm on a type.
func (c *Checker) TypeFilter(ctx context.Context, p principal.Principal, perm Permission) (func(string) bool, error) {
	if c.Privileged(p) {
		return func(string) bool { return true }, nil
	}
	rows, err := c.db.Query(ctx, sqlTypesGrantedTo, p.String(), p.Kind, string(perm))
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, err
		}
		names[n] = true
	}
	rows.Close()
	return func(n string) bool { return names[n] }, rows.Err()
}
