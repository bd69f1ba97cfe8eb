//go:build unix && !linux

package acp

import "syscall"

func setParentDeathSignal(*syscall.SysProcAttr) {}
