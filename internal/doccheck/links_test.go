package doccheck

import (
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

var (
	// inlineLink is [text](target) and ![alt](target), with an optional "title".
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refLink is a reference definition: [label]: target
	refLink    = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s+.*)?$`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	heading    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	mdLinkText = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// TestRelativeLinks follows every relative link of every Markdown file: the file or
// directory must exist, and an anchor into a Markdown file must name one of its headings
// (as GitHub derives heading anchors).
func TestRelativeLinks(t *testing.T) {
	root := repoRoot(t)
	anchors := map[string]map[string]bool{} // file → its anchors, read once
	anchorsOf := func(rel string) map[string]bool {
		if a, ok := anchors[rel]; ok {
			return a
		}
		text, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		a := markdownAnchors(string(text))
		anchors[rel] = a
		return a
	}
	checked := 0
	for _, rel := range markdownFiles(t, root) {
		text, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range markdownLinks(string(text)) {
			u, err := url.Parse(l.target)
			if err != nil || u.Scheme != "" || u.Host != "" || strings.HasPrefix(l.target, "//") {
				continue // not a relative link
			}
			checked++
			target := rel
			if u.Path != "" {
				target = path.Clean(path.Join(path.Dir(rel), u.Path))
				if strings.HasPrefix(target, "../") || target == ".." {
					t.Errorf("%s:%d: %s leads out of the repository", rel, l.line, l.target)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(target))); err != nil {
					t.Errorf("%s:%d: %s: no such file", rel, l.line, l.target)
					continue
				}
			}
			if u.Fragment != "" && strings.HasSuffix(target, ".md") && !anchorsOf(target)[u.Fragment] {
				t.Errorf("%s:%d: %s: %s has no heading with the anchor #%s", rel, l.line, l.target, target, u.Fragment)
			}
		}
	}
	t.Logf("%d relative links checked", checked)
}

type mdLink struct {
	line   int
	target string
}

// markdownLinks returns the links of a Markdown text outside code blocks and code spans.
// A link's text may wrap onto the next line, so links are looked for in whole paragraphs
// (runs of non-blank lines); a link's line is its paragraph's first.
func markdownLinks(text string) []mdLink {
	var links []mdLink
	var para []string
	paraLine := 0
	flush := func() {
		joined := codeSpan.ReplaceAllString(strings.Join(para, " "), "")
		for _, m := range inlineLink.FindAllStringSubmatch(joined, -1) {
			links = append(links, mdLink{paraLine, m[1]})
		}
		for _, l := range para {
			if m := refLink.FindStringSubmatch(l); m != nil {
				links = append(links, mdLink{paraLine, m[1]})
			}
		}
		para = para[:0]
	}
	inFence := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			flush()
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		if len(para) == 0 {
			paraLine = i + 1
		}
		para = append(para, line)
	}
	flush()
	return links
}

// markdownAnchors returns the anchors of a Markdown text's headings, derived as GitHub
// does (lower case; letters, digits, spaces, '-' and '_' kept, spaces made '-'; a
// repeated anchor gets -1, -2, …), and of its <a name|id> tags.
func markdownAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := headingSlug(m[1])
		if n := seen[slug]; n > 0 {
			anchors[slug+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

func headingSlug(h string) string {
	h = mdLinkText.ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

func TestMarkdownLinks(t *testing.T) {
	text := "See [a\nwrapped link](A.md#x), `[not](a-link.md)` and ![img](p.png \"title\").\n\n" +
		"```\n[in](code.md)\n```\n[ref]: R.md\n"
	var got []string
	for _, l := range markdownLinks(text) {
		got = append(got, l.target+"@"+strconv.Itoa(l.line))
	}
	if want := "A.md#x@1 p.png@1 R.md@7"; strings.Join(got, " ") != want {
		t.Errorf("links = %q, want %q", strings.Join(got, " "), want)
	}
}

func TestHeadingSlug(t *testing.T) {
	for h, want := range map[string]string{
		"Use from an editor (ACP)":           "use-from-an-editor-acp",
		"6. Cross-entity wakes":              "6-cross-entity-wakes",
		"Slash commands: the picker's view":  "slash-commands-the-pickers-view",
		"`GET …/slash-commands`: 12,400/s":   "get-slash-commands-12400s",
		"Issue 26: house A/B":                "issue-26-house-ab",
		"The [console](docs/CONSOLE.md) tab": "the-console-tab",
	} {
		if got := headingSlug(h); got != want {
			t.Errorf("headingSlug(%q) = %q, want %q", h, got, want)
		}
	}
}
