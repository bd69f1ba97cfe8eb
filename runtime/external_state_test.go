package runtime

import "testing"

// The state cache keeps at most max entities, evicting the least recently used, but never
// one a run holds.
func TestStateCacheEvictsIdleEntitiesOnly(t *testing.T) {
	c := newStateCache(2)
	a := c.get("/t/a")
	a.mu.Lock() // a run holds a
	c.get("/t/b")
	c.get("/t/c") // over the bound: b is the oldest idle one
	if _, ok := c.byID["/t/a"]; !ok {
		t.Fatal("evicted an entity in use")
	}
	if _, ok := c.byID["/t/b"]; ok {
		t.Fatal("kept the least recently used idle entity")
	}
	a.mu.Unlock()
	c.get("/t/d")
	if len(c.byID) != 2 || c.lru.Len() != 2 {
		t.Fatalf("cache holds %d entities (%d in the list), want 2", len(c.byID), c.lru.Len())
	}
	if got := c.get("/t/d"); got != c.byID["/t/d"] {
		t.Fatal("get returned another state than the cached one")
	}
}
