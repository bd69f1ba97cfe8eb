package schemas

import (
	"crypto/sha256"
	"encoding/json"
	"sync"
)

// Cache compiles each distinct schema (keyed by the SHA-256 of its bytes, so the same
// schema with different whitespace is compiled separately) once and shares the result.
// It is safe for concurrent use: concurrent first requests for the same schema wait for
// a single compilation. Successful compilations are kept for the life of the Cache;
// a failed compilation is handed to the requests that were waiting for it and then
// forgotten, so garbage schemas do not accumulate.
type Cache struct {
	mu      sync.Mutex
	entries map[[sha256.Size]byte]*cacheEntry
	ready   int // successfully compiled entries
}

type cacheEntry struct {
	done   chan struct{}
	schema *Schema
	err    error
}

// compileForCache is Compile; tests replace it to count compilations.
var compileForCache = Compile

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{entries: map[[sha256.Size]byte]*cacheEntry{}}
}

// Get returns the compiled schema, compiling it on first use.
func (c *Cache) Get(schema json.RawMessage) (*Schema, error) {
	key := sha256.Sum256(schema)
	c.mu.Lock()
	if e, ok := c.entries[key]; ok {
		c.mu.Unlock()
		<-e.done
		return e.schema, e.err
	}
	e := &cacheEntry{done: make(chan struct{})}
	c.entries[key] = e
	c.mu.Unlock()

	// Compile recovers its own panics, so done is always closed.
	e.schema, e.err = compileForCache(schema)

	c.mu.Lock()
	if e.err != nil {
		delete(c.entries, key)
	} else {
		c.ready++
	}
	c.mu.Unlock()
	close(e.done)
	return e.schema, e.err
}

// Len is the number of compiled schemas held (compilations in flight are not counted).
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ready
}
