package runtime

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzSkillFrontMatter: any file content reads without panicking, the body is always
// the tail of the content (nothing invented), a file without a block is all body, and a
// front matter with an error gives no values.
func FuzzSkillFrontMatter(f *testing.F) {
	for _, s := range []string{
		"---\nkeywords: [a, \"b, c\", 'd', ]\narguments: [x,y]\n---\nbody\n",
		"---\nkeywords:\n  - one\n  - \"two # not\"   # c\n\narguments:\n- first\n- 'second'\ndescription: after\n---\n",
		"---\ndescription: \"Say \\\"hi\\\"\\tnow: \\u00e9 \\ud83d\\ude00\"\nwhenToUse: 'it''s # fine'\n---\n",
		"---\ndescription: >\n  one\n  two\n\n  three\nwhen_to_use: |-\n  line one\n  line two\n---\n",
		"\ufeff---\r\ndescription: windows\r\n---\r\nbody\r\n",
		"---\n---\nbody", "---\ndescription: never closed\n", "# Title\n", "---", "---\n...",
		"---\nk: \"\\u12\"\nk2: '\n---\n", "---\nk: |+\n\n\n---\n", "---\n- orphan\n  - nested\n: novalue\n---\n",
		"---\nbase: &b [a, b]\nkeywords: *b\nuser-invocable: *b\n---\n",
		"---\n<<: {description: merged}\ndescription: own\n---\n",
		"---\ndescription: a\ndescription: b\n---\n",
		"---\nuser-invocable: maybe\nkeywords: {a: 1}\n---\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, content string) {
		fm, body, err := readFrontMatter(content)
		if !strings.HasSuffix(content, body) {
			t.Fatalf("body %q is not the tail of the content", body)
		}
		if _, _, found := splitFrontMatter(content); !found && body != content {
			t.Fatalf("no front matter, yet the body %q is not the whole content", body)
		}
		if err != nil {
			if fm != (frontMatter{}) {
				t.Fatalf("an error (%v) and values %+v", err, fm)
			}
			if !strings.HasPrefix(err.Error(), "front matter: ") {
				t.Fatalf("error %q does not say it is about the front matter", err)
			}
		}
	})
}

// FuzzSkillArguments: the argument splitter agrees with strings.Fields when nothing is
// quoted and never yields an empty argument; substitution never panics and leaves content
// without placeholders alone when no arguments are given.
func FuzzSkillArguments(f *testing.F) {
	f.Add("12 'two words' \"x\"", "Review $ARGUMENTS: $0 $1 $number $title $9", "number title")
	f.Add("", "no placeholders", "")
	f.Add("a", "$", "a a")
	f.Add("'unclosed", "$0$0$ARGUMENTS$ARGUMENTSx", "ARGUMENTS 0")
	f.Add("\u00a0x\u2003y", "$x.y", "x y")
	f.Fuzz(func(t *testing.T, raw, content, names string) {
		parts := splitSkillArguments(raw)
		for _, p := range parts {
			if p == "" {
				t.Fatalf("empty argument from %q: %q", raw, parts)
			}
		}
		// Composer text arrives through JSON, so it is always UTF-8.
		if utf8.ValidString(raw) && !strings.ContainsAny(raw, `"'`) {
			if want := strings.Fields(raw); !slices.Equal(parts, want) && !(len(parts) == 0 && len(want) == 0) {
				t.Fatalf("splitSkillArguments(%q) = %q, strings.Fields gives %q", raw, parts, want)
			}
		}
		out := substituteSkillArguments(content, raw, strings.Fields(names))
		if raw == "" && !strings.Contains(content, "$") && out != content {
			t.Fatalf("no arguments and no placeholders, yet %q became %q", content, out)
		}
	})
}
