// Package leakcheck is every test binary's TestMain: it runs the tests, then the
// package's teardown, then fails the run if any goroutine is still alive. A goroutine
// left over is a service a test (or the code) did not stop, a connection nobody closed, a
// loop without a way out: in production each is a leak that grows with every request or
// restart, so the tests look for them after every package.
//
// A package whose tests need a database calls pgtest.Main, which runs this check after
// stopping its cluster; any other package calls Main directly:
//
//	func TestMain(m *testing.M) { leakcheck.Main(m) }
package leakcheck

import (
	"fmt"
	"os"

	"go.uber.org/goleak"
)

// Tests is what Main runs: a *testing.M.
type Tests interface{ Run() int }

// Main runs the tests and the teardown, checks for goroutines left behind, and exits.
func Main(m Tests, teardown ...func() error) { os.Exit(Run(m, teardown...)) }

// Run is Main without the exit: it returns the exit code.
func Run(m Tests, teardown ...func() error) int {
	code := m.Run()
	for _, f := range teardown {
		if err := f(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}
	// A failed run already says what went wrong; goroutines it left (a test stopped
	// halfway) would only bury that.
	if code != 0 {
		return code
	}
	if err := goleak.Find(Ignored()...); err != nil {
		fmt.Fprintf(os.Stderr, "leakcheck: goroutines still running after the tests: %v\n", err)
		return 1
	}
	return 0
}

// Ignored are goroutines that outlive every test by design, none of them ours.
func Ignored() []goleak.Option {
	return nil
}
