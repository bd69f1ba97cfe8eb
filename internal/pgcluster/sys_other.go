//go:build !unix

package pgcluster

import (
	"errors"
	"os/exec"
)

type serverUser struct{ name string }

func lookupServerUser() (*serverUser, error)      { return nil, nil }
func (u *serverUser) apply(*exec.Cmd)             {}
func (u *serverUser) chown(string) error          { return nil }
func (u *serverUser) chownTree(string) error      { return nil }
func (u *serverUser) checkReachable(string) error { return nil }
func processAlive(pid int) bool                   { return pid > 0 }
func startReaper(int, string, string) (func(), error) {
	return nil, errors.New("pgcluster: StopOnExit is not supported on this platform")
}
