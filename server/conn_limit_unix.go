//go:build unix

package server

import "syscall"

// defaultMaxConns is the open-file limit (which Go raises to the hard limit at start)
// less room for the database pool, files and the listener, at most 100,000: past it,
// accept fails with EMFILE for everyone instead of making newcomers wait their turn.
func defaultMaxConns() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < 1024 {
		return 1024 - 256
	}
	return int(min(lim.Cur-256, 100_000))
}
