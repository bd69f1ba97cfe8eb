//go:build !unix

package pgcluster

import (
	"errors"
	"io/fs"
	"os"
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

func lockFile(string) (*os.File, bool, error) {
	return nil, false, errors.New("exclusive clusters are not supported on this platform")
}
func processExited(pid int) bool           { return !processAlive(pid) }
func fileOwner(fs.FileInfo) (uint32, bool) { return 0, false }
func (u *serverUser) uidOrSelf() uint32    { return 0 }
