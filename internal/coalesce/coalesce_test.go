package coalesce

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/entityd/entityd/internal/testwait"
)

// Each caller gets the answer to its own request, however the requests were grouped;
// no statement carries more than max; an error answers every request of its statement.
func TestCoalescerAnswersEachCaller(t *testing.T) {
	var mu sync.Mutex
	var sizes []int
	release := make(chan struct{})
	c := New(4, func(_ context.Context, reqs []int) ([]int, error) {
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
			got[i], errs[i] = c.Do(context.Background(), req)
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
	c := New(4, func(_ context.Context, reqs []int) ([]int, error) {
		<-block
		return make([]int, len(reqs)), nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Do(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	close(block)
}

// A request whose caller stopped waiting before a statement took it is not carried out.
func TestCoalescerDropsAbandonedRequests(t *testing.T) {
	first := make(chan struct{})
	release := make(chan struct{})
	var mu sync.Mutex
	var ran []int
	c := New(8, func(_ context.Context, reqs []int) ([]int, error) {
		mu.Lock()
		ran = append(ran, reqs...)
		mu.Unlock()
		if reqs[0] == 1 {
			close(first)
			<-release // hold the first statement while the others queue
		}
		return make([]int, len(reqs)), nil
	})
	done := make(chan error, 1)
	go func() { _, err := c.Do(context.Background(), 1); done <- err }()
	<-first
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() { _, err := c.Do(ctx, 2); gaveUp <- err }()
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("the abandoned caller: %v", err)
	}
	kept := make(chan error, 1)
	go func() { _, err := c.Do(context.Background(), 3); kept <- err }()
	// 3 is queued behind the held statement (eventually: the goroutine may be late)
	testwait.Until(t, "3 to queue behind the held statement", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.queue) == 2
	})
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-kept; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 2 || ran[0] != 1 || ran[1] != 3 {
		t.Fatalf("statements ran %v, want [1 3]", ran)
	}
}

// A statement Postgres aborted to break a deadlock is run again.
func TestCoalescerRetriesDeadlocks(t *testing.T) {
	calls := 0
	c := New(8, func(_ context.Context, reqs []int) ([]int, error) {
		calls++
		if calls == 1 {
			return nil, &pgconn.PgError{Code: "40P01", Message: "deadlock detected"}
		}
		return []int{reqs[0] + 1}, nil
	})
	got, err := c.Do(context.Background(), 41)
	if err != nil || got != 42 || calls != 2 {
		t.Fatalf("got %d, %v after %d calls", got, err, calls)
	}
}

// InOrder answers each key in its place, a missing one with the zero value, a repeated
// one each time.
func TestInOrder(t *testing.T) {
	got := InOrder([]string{"b", "x", "a", "b"}, map[string]int{"a": 1, "b": 2})
	if len(got) != 4 || got[0] != 2 || got[1] != 0 || got[2] != 1 || got[3] != 2 {
		t.Fatalf("InOrder: %v", got)
	}
}
