//go:build unix

package acp

import (
	"os/exec"
	"syscall"
)

// setProcAttrs puts an MCP server in a process group of its own, so that stopping it
// reaches what it started too (npx starts node, a shell starts its command), and, on
// Linux, has the kernel kill it if the adapter dies first (its stdin closing, MCP's
// stdio shutdown, covers the rest).
func setProcAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(cmd.SysProcAttr)
}

// killGroup sends SIGKILL to the process group led by pid (the server and what it
// started); nothing when the group is gone.
func killGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}
