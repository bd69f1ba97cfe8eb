package leakcheck

import (
	"errors"
	"testing"
)

func TestMain(m *testing.M) { Main(m) }

// tests is a fake test run: it returns code after doing run.
type tests struct {
	code int
	run  func()
}

func (f tests) Run() int {
	f.run()
	return f.code
}

func TestAGoroutineLeftRunningFailsThePassingRun(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	leaky := tests{run: func() { go func() { <-release }() }}
	if code := Run(leaky); code != 1 {
		t.Fatalf("a run that leaves a goroutine exited %d, want 1", code)
	}
}

func TestAGoroutineStoppedByTheTeardownPasses(t *testing.T) {
	release := make(chan struct{})
	done := make(chan struct{})
	stoppable := tests{run: func() {
		go func() { <-release; close(done) }()
	}}
	stop := func() error { close(release); <-done; return nil }
	if code := Run(stoppable, stop); code != 0 {
		t.Fatalf("a run whose teardown stops its goroutine exited %d, want 0", code)
	}
}

func TestAFailingTeardownFailsTheRun(t *testing.T) {
	if code := Run(tests{run: func() {}}, func() error { return errors.New("leakcheck test: a teardown that fails on purpose") }); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
}

func TestAFailedRunKeepsItsCode(t *testing.T) {
	if code := Run(tests{code: 3, run: func() {}}); code != 3 {
		t.Fatalf("exit %d, want 3", code)
	}
}
