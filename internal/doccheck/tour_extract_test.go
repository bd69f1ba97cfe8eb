package doccheck

import (
	"fmt"
	"strings"
	"testing"
)

// tourBlock is one ```sh block of a walkthrough, with what its output must contain.
type tourBlock struct {
	line    int // the block's first line of code in its file (1-based)
	code    string
	expects []string
}

const (
	markStart  = "<!-- tour:start -->"
	markEnd    = "<!-- tour:end -->"
	markExpect = "<!-- tour:expect "
)

// extractTour returns the shell blocks between the tour markers of a Markdown file, in
// order, and how many tours (start markers) it has. A marker that cannot mean what it says (an end without a start, an expect
// before any block, a region or fence left open) is an error rather than a block
// silently left out of the run.
func extractTour(text string) (blocks []tourBlock, tours int, err error) {
	inTour, inFence, runFence := false, false, false
	var code strings.Builder
	codeLine := 0
	fail := func(format string, args ...any) ([]tourBlock, int, error) {
		return nil, 0, fmt.Errorf(format, args...)
	}
	for i, raw := range strings.Split(text, "\n") {
		n := i + 1
		line := strings.TrimSpace(raw)
		if inFence {
			if strings.HasPrefix(line, "```") && strings.Trim(line, "`") == "" {
				inFence = false
				if runFence {
					blocks = append(blocks, tourBlock{line: codeLine, code: code.String()})
				}
				continue
			}
			if runFence {
				code.WriteString(raw)
				code.WriteByte('\n')
			}
			continue
		}
		switch {
		case strings.HasPrefix(line, "```"):
			inFence = true
			lang := strings.TrimSpace(strings.TrimPrefix(line, "```"))
			runFence = inTour && (lang == "sh" || lang == "bash")
			code.Reset()
			codeLine = n + 1
		case line == markStart:
			if inTour {
				return fail("line %d: %s inside a tour", n, markStart)
			}
			inTour = true
			tours++
		case line == markEnd:
			if !inTour {
				return fail("line %d: %s without %s", n, markEnd, markStart)
			}
			inTour = false
		case strings.HasPrefix(line, markExpect):
			want, ok := strings.CutSuffix(strings.TrimPrefix(line, markExpect), "-->")
			want = strings.TrimSpace(want)
			switch {
			case !inTour:
				return fail("line %d: tour:expect outside a tour", n)
			case !ok || want == "":
				return fail("line %d: tour:expect needs text and a closing -->", n)
			case len(blocks) == 0:
				return fail("line %d: tour:expect before any block", n)
			}
			last := &blocks[len(blocks)-1]
			last.expects = append(last.expects, want)
		case strings.Contains(line, "tour:"):
			if strings.HasPrefix(line, "<!--") {
				return fail("line %d: unknown tour marker %q", n, line)
			}
		}
	}
	switch {
	case inFence:
		return fail("a code fence is left open")
	case inTour:
		return fail("%s without %s", markStart, markEnd)
	case tours > 0 && len(blocks) == 0:
		return fail("a tour without a ```sh block")
	}
	return blocks, tours, nil
}

func TestExtractTour(t *testing.T) {
	doc := strings.Join([]string{
		"# Title",
		"```sh",
		"echo not run: before the tour",
		"```",
		markStart,
		"```sh",
		"echo one",
		"echo two",
		"```",
		"<!-- tour:expect one -->",
		"<!-- tour:expect two -->",
		"```json",
		`{"not": "run"}`,
		"```",
		"```bash",
		"echo three",
		"```",
		markEnd,
		"```sh",
		"echo not run: after the tour",
		"```",
	}, "\n")
	blocks, tours, err := extractTour(doc)
	if err != nil {
		t.Fatal(err)
	}
	if tours != 1 {
		t.Errorf("tours = %d, want 1", tours)
	}
	if len(blocks) != 2 {
		t.Fatalf("got %d blocks, want 2: %+v", len(blocks), blocks)
	}
	if b := blocks[0]; b.line != 7 || b.code != "echo one\necho two\n" || strings.Join(b.expects, "|") != "one|two" {
		t.Errorf("block 0 = %+v", b)
	}
	if b := blocks[1]; b.line != 16 || b.code != "echo three\n" || len(b.expects) != 0 {
		t.Errorf("block 1 = %+v", b)
	}
}

func TestExtractTourRefusesBrokenMarkers(t *testing.T) {
	for name, doc := range map[string]string{
		"end without start":    markEnd,
		"start twice":          markStart + "\n" + markStart + "\n" + markEnd,
		"unterminated tour":    markStart + "\n```sh\necho\n```",
		"unterminated fence":   markStart + "\n```sh\necho\n" + markEnd,
		"expect before blocks": markStart + "\n<!-- tour:expect x -->\n" + markEnd,
		"expect outside":       "```sh\necho\n```\n<!-- tour:expect x -->",
		"empty expect":         markStart + "\n```sh\necho\n```\n<!-- tour:expect -->\n" + markEnd,
		"misspelt marker":      "<!-- tour:begin -->",
		"tour without blocks":  markStart + "\n```json\n{}\n```\n" + markEnd,
	} {
		if _, _, err := extractTour(doc); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
