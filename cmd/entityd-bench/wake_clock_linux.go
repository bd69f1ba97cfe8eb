package main

import (
	"syscall"
	"unsafe"
)

// monoNow is CLOCK_MONOTONIC in nanoseconds. It is the same clock in every process of
// the machine, so the load generator's send timestamps and the handler's start times
// (taken in the wake-server process) can be subtracted; unlike the wall clock it never
// jumps.
func monoNow() int64 {
	var ts syscall.Timespec
	_, _, errno := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, 1 /* CLOCK_MONOTONIC */, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		panic("clock_gettime(CLOCK_MONOTONIC): " + errno.Error())
	}
	return ts.Nano()
}

// monoShared reports whether monoNow is comparable across processes.
const monoShared = true
