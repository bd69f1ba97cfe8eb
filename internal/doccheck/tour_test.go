package doccheck

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tourTimeout bounds one walkthrough. The README promises ten minutes to a reader; the
// machine needs a few seconds, and only a command that hangs gets near this.
const tourTimeout = 3 * time.Minute

// TestTours runs every walkthrough (the blocks between tour markers) of every Markdown
// file, each against a fresh server of its own, and requires the README to have one.
func TestTours(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("the walkthroughs are curl commands, and curl is not installed (Debian: apt-get install curl)")
	}
	root := repoRoot(t)
	files := markdownFiles(t, root)
	ran := map[string]bool{}
	for _, rel := range files {
		text, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		blocks, tours, err := extractTour(string(text))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		if tours == 0 {
			continue
		}
		ran[rel] = true
		t.Run(strings.ReplaceAll(rel, "/", "_"), func(t *testing.T) {
			runTour(t, root, rel, blocks)
		})
	}
	if !ran["README.md"] {
		t.Error("README.md has no tour (" + markStart + " … " + markEnd + ")")
	}
}

var failedAt = regexp.MustCompile(`@@tour-failed (\d+) (\d+)@@`)

// runTour starts a server and runs the blocks in one bash session, then checks each
// block's output for what its tour:expect lines name.
func runTour(t *testing.T, root, rel string, blocks []tourBlock) {
	srv := startServer(t, root)

	// Each block is preceded by a marker line on stdout, so that its output can be told
	// apart, and a failing command names its block and its line in the Markdown file.
	var script strings.Builder
	script.WriteString("set -Eeuo pipefail\n")
	script.WriteString(`trap 'echo "@@tour-failed $? $LINENO@@" >&2' ERR` + "\n")
	lineOf := []int{} // script line (0-based) → line in the Markdown file, 0 for ours
	lineOf = append(lineOf, 0, 0)
	for i, b := range blocks {
		fmt.Fprintf(&script, "printf '\\n@@tour-block %d@@\\n'\n", i)
		lineOf = append(lineOf, 0)
		for j, l := range strings.Split(strings.TrimSuffix(b.code, "\n"), "\n") {
			script.WriteString(l + "\n")
			lineOf = append(lineOf, b.line+j)
		}
	}
	script.WriteString("printf '\\n@@tour-end@@\\n'\n")

	ctx, cancel := context.WithTimeout(context.Background(), tourTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String(), "tour")
	cmd.Dir = t.TempDir()
	cmd.Env = append(environWithout("ENTITYD"), "ENTITYD="+srv.url)
	cmd.Stdin = nil
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A block may start a background job (a live read); its own process group lets the
	// whole session be ended, jobs included, when the tour ends or hangs.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	started := time.Now()
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil {
		where := ""
		if m := failedAt.FindStringSubmatch(stderr.String()); m != nil {
			if n, _ := strconv.Atoi(m[2]); n > 0 && n <= len(lineOf) && lineOf[n-1] > 0 {
				where = fmt.Sprintf(" at %s:%d (exit status %s)", rel, lineOf[n-1], m[1])
			}
		}
		t.Fatalf("the tour of %s failed%s: %v\n--- stdout:\n%s\n--- stderr:\n%s\n--- server log:\n%s",
			rel, where, err, stdout.String(), stderr.String(), srv.log())
	}
	outputs, err := splitOutputs(stdout.String(), len(blocks))
	if err != nil {
		t.Fatalf("%s: %v\n--- stdout:\n%s", rel, err, stdout.String())
	}
	commands := 0
	for i, b := range blocks {
		commands += countCommands(b.code)
		for _, want := range b.expects {
			if !strings.Contains(outputs[i], want) {
				t.Errorf("%s:%d: the block's output lacks %q; it was:\n%s", rel, b.line, want, outputs[i])
			}
		}
	}
	t.Logf("%s: %d blocks, %d commands, in %v", rel, len(blocks), commands, time.Since(started).Round(time.Millisecond))
}

// splitOutputs cuts a tour's stdout at the block markers.
func splitOutputs(out string, n int) ([]string, error) {
	outputs := make([]string, n)
	for i := n - 1; i >= 0; i-- {
		marker := fmt.Sprintf("\n@@tour-block %d@@\n", i)
		at := strings.LastIndex(out, marker)
		if at < 0 {
			return nil, fmt.Errorf("block %d's marker is missing from the output", i)
		}
		outputs[i] = strings.TrimSuffix(out[at+len(marker):], "\n@@tour-end@@\n")
		out = out[:at]
	}
	return outputs, nil
}

// countCommands counts the commands a block runs, for the log: lines that are neither
// comments, blank, nor the continuation of a command (after a trailing backslash or
// inside a quoted argument spread over lines).
func countCommands(code string) int {
	n, continued, quote := 0, false, rune(0)
	for _, line := range strings.Split(code, "\n") {
		trimmed := strings.TrimSpace(line)
		if !continued && quote == 0 && trimmed != "" && !strings.HasPrefix(trimmed, "#") {
			n++
		}
	scan:
		for _, r := range line {
			switch {
			case quote == 0 && (r == '\'' || r == '"'):
				quote = r
			case quote != 0 && r == quote:
				quote = 0
			case quote == 0 && r == '#':
				break scan // a comment: a quote in it opens nothing
			}
		}
		continued = quote == 0 && strings.HasSuffix(trimmed, "\\")
	}
	return n
}

func TestCountCommands(t *testing.T) {
	code := "# a comment\nA=1\ncurl -X POST x \\\n  -d '{\n  \"a\": 1}'\n\necho \"$A\"   # it's one\n"
	if n := countCommands(code); n != 3 {
		t.Errorf("countCommands = %d, want 3", n)
	}
}
