package dssub

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// Each caller gets the answer to its own request, however the requests were grouped;
// no statement carries more than max; an error answers every request of its statement.
func TestCoalescerAnswersEachCaller(t *testing.T) {
	var mu sync.Mutex
	var sizes []int
	release := make(chan struct{})
	c := newCoalescer(4, func(_ context.Context, reqs []int) ([]int, error) {
		<-release
		mu.Lock()
		sizes = append(sizes, len(reqs))
		mu.Unlock()
		out := make([]int, len(reqs))
		for i, r := range reqs {
			if r < 0 {
				return nil, errors.New("refused")
			}
			out[i] = r * 10
		}
		return out, nil
	})
	const callers = 50
	var wg sync.WaitGroup
	errs := make([]error, callers)
	got := make([]int, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := i
			if i == 17 {
				req = -1
			}
			got[i], errs[i] = c.do(context.Background(), req)
		}()
	}
	close(release)
	wg.Wait()
	total := 0
	for _, n := range sizes {
		if n > 4 {
			t.Fatalf("a statement carried %d requests (max 4)", n)
		}
		total += n
	}
	if total != callers {
		t.Fatalf("%d requests run, want %d", total, callers)
	}
	failed := 0
	for i := range callers {
		switch {
		case errs[i] != nil:
			failed++
		case got[i] != i*10:
			t.Fatalf("caller %d got %d", i, got[i])
		}
	}
	if errs[17] == nil || failed < 1 || failed > 4 {
		t.Fatalf("the refused request's statement: %d callers failed, caller 17: %v", failed, errs[17])
	}
}

// A caller that stops waiting is answered with its context's error.
func TestCoalescerCallerGivesUp(t *testing.T) {
	block := make(chan struct{})
	c := newCoalescer(4, func(_ context.Context, reqs []int) ([]int, error) {
		<-block
		return make([]int, len(reqs)), nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.do(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	close(block)
}
