//go:build !unix

package acp

import "os/exec"

// Elsewhere an MCP server is stopped by closing its stdin and ending its process.
func setProcAttrs(*exec.Cmd) {}

func killGroup(int) {}
