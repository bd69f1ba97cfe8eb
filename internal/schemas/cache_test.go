package schemas

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/entityd/entityd/internal/testwait"
)

// compiles counts the cache's compilations and holds each one in flight, having said it
// started, until the test releases them: so a test knows a compilation is under way
// while other callers arrive.
type compiles struct {
	n       atomic.Int64
	started chan struct{}
	release chan struct{}
}

func holdCompiles(t *testing.T) *compiles {
	t.Helper()
	c := &compiles{started: make(chan struct{}, 100), release: make(chan struct{})}
	orig := compileForCache
	compileForCache = func(s json.RawMessage) (*Schema, error) {
		c.n.Add(1)
		c.started <- struct{}{}
		<-c.release
		return orig(s)
	}
	t.Cleanup(func() { compileForCache = orig })
	return c
}

// getConcurrently starts the first Get of schema, waits until its compilation is in
// flight, then has workers-1 more callers ask for it, releases the compilation and
// returns what each got.
func getConcurrently(t *testing.T, c *Cache, held *compiles, schema json.RawMessage, workers int) ([]*Schema, []error) {
	t.Helper()
	results := make([]*Schema, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	get := func(i int) {
		defer wg.Done()
		results[i], errs[i] = c.Get(schema)
	}
	wg.Add(1)
	go get(0)
	testwait.Recv(t, held.started, "the first compilation to start")
	for i := 1; i < workers; i++ {
		wg.Add(1)
		go get(i)
	}
	close(held.release)
	wg.Wait()
	return results, errs
}

func TestCacheCompilesOnceUnderConcurrency(t *testing.T) {
	held := holdCompiles(t)
	c := NewCache()
	schema := json.RawMessage(`{"type":"object","required":["a"]}`)
	results, errs := getConcurrently(t, c, held, schema, 64)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Get %d: %v", i, err)
		}
	}
	if got := held.n.Load(); got != 1 {
		t.Fatalf("compiled %d times, want 1", got)
	}
	for i, s := range results {
		if s == nil || s != results[0] {
			t.Fatalf("result %d is %p, want shared %p", i, s, results[0])
		}
	}
	if c.Len() != 1 {
		t.Fatalf("Len = %d, want 1", c.Len())
	}
	// Later calls hit the cache; a different schema compiles separately.
	if s, _ := c.Get(schema); s != results[0] {
		t.Fatal("cache miss on a repeated schema")
	}
	if _, err := c.Get(json.RawMessage(`{"type":"string"}`)); err != nil {
		t.Fatal(err)
	}
	if got := held.n.Load(); got != 2 {
		t.Fatalf("compiled %d times, want 2", got)
	}
	if c.Len() != 2 {
		t.Fatalf("Len = %d, want 2", c.Len())
	}
	if d := results[0].Validate([]byte(`{}`)); len(d) != 1 {
		t.Fatalf("cached schema does not validate: %v", d)
	}
}

func TestCacheSharesErrorsWithWaitersButDoesNotKeepThem(t *testing.T) {
	held := holdCompiles(t)
	c := NewCache()
	bad := json.RawMessage(`{"$ref":"#/nowhere"}`)
	_, errs := getConcurrently(t, c, held, bad, 8)
	for i, err := range errs {
		if err == nil {
			t.Fatalf("Get %d: no error", i)
		}
	}
	if c.Len() != 0 {
		t.Fatalf("Len = %d, want 0", c.Len())
	}
	before := held.n.Load()
	if _, err := c.Get(bad); err == nil {
		t.Fatal("no error")
	}
	if held.n.Load() != before+1 {
		t.Fatal("a failed compilation was cached")
	}
}
