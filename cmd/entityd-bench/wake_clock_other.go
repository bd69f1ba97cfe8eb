//go:build !linux

package main

import "time"

var monoBase = time.Now()

// monoNow is nanoseconds since this process started. It is only comparable within one
// process: on this platform run the all-in-one "wake" command, not wake-server and
// wake-load separately.
func monoNow() int64 { return int64(time.Since(monoBase)) }

// monoShared reports whether monoNow is comparable across processes.
const monoShared = false
