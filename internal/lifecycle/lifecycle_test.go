package lifecycle

import (
	"context"
	"errors"
	"testing"
)

type recorder struct {
	name string
	log  *[]string
	fail bool
}

func (r recorder) Start(context.Context) error {
	if r.fail {
		return errors.New("no")
	}
	*r.log = append(*r.log, "start "+r.name)
	return nil
}
func (r recorder) Stop(context.Context) { *r.log = append(*r.log, "stop "+r.name) }

func TestGroupStopsInReverseOrderOnce(t *testing.T) {
	var log []string
	var g Group
	ctx := context.Background()
	for _, n := range []string{"a", "b", "c"} {
		if err := g.Start(ctx, recorder{name: n, log: &log}); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Start(ctx, recorder{name: "d", log: &log, fail: true}); err == nil {
		t.Fatal("a failing start reports its error")
	}
	g.Stop(ctx)
	g.Stop(ctx)
	want := "start a,start b,start c,stop c,stop b,stop a"
	if got := join(log); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestLoopRunsUntilStop(t *testing.T) {
	started := make(chan struct{})
	ended := false
	l := &Loop{Run: func(ctx context.Context) { close(started); <-ctx.Done(); ended = true }}
	ctx, cancel := context.WithCancel(context.Background())
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cancel() // the caller's context ending does not stop the loop: Stop does
	<-started
	l.Stop(context.Background())
	if !ended {
		t.Fatal("Stop returned before the loop ended")
	}
}

func join(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += ","
		}
		out += s
	}
	return out
}
