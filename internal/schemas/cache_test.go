package schemas

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func countCompiles(t *testing.T) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	orig := compileForCache
	compileForCache = func(s json.RawMessage) (*Schema, error) {
		n.Add(1)
		time.Sleep(20 * time.Millisecond) // keep the first compilation in flight
		return orig(s)
	}
	t.Cleanup(func() { compileForCache = orig })
	return &n
}

func TestCacheCompilesOnceUnderConcurrency(t *testing.T) {
	n := countCompiles(t)
	c := NewCache()
	schema := json.RawMessage(`{"type":"object","required":["a"]}`)
	const workers = 64
	results := make([]*Schema, workers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			s, err := c.Get(schema)
			if err != nil {
				t.Errorf("Get: %v", err)
			}
			results[i] = s
		}(i)
	}
	close(start)
	wg.Wait()
	if got := n.Load(); got != 1 {
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
	if got := n.Load(); got != 2 {
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
	n := countCompiles(t)
	c := NewCache()
	bad := json.RawMessage(`{"$ref":"#/nowhere"}`)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, errs[i] = c.Get(bad)
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			t.Fatalf("Get %d: no error", i)
		}
	}
	if c.Len() != 0 {
		t.Fatalf("Len = %d, want 0", c.Len())
	}
	before := n.Load()
	if _, err := c.Get(bad); err == nil {
		t.Fatal("no error")
	}
	if n.Load() != before+1 {
		t.Fatal("a failed compilation was cached")
	}
}
