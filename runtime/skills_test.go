package runtime_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/runtime"
)

const skillFixtures = "testdata/skills"

func skStrp(s string) *string { return &s }
func skBoolp(b bool) *bool    { return &b }

func skillNames(skills []runtime.Skill) []string {
	out := make([]string, len(skills))
	for i, s := range skills {
		out[i] = s.Name
	}
	return out
}

func findSkill(t *testing.T, skills []runtime.Skill, name string) runtime.Skill {
	t.Helper()
	for _, s := range skills {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no skill %q in %v", name, skillNames(skills))
	return runtime.Skill{}
}

// copySkillDir copies a fixture directory into a temporary one the test may change.
func copySkillDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	require.NoError(t, err)
	return dst
}

func writeSkillFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// The reference's pinned context-loader test (test/skills/context-loader.test.ts): the
// commands are init (argument project_name; Bad-Arg dropped; its description is the
// argument-hint) and quickstart; the non-invocable skill and BadName are not commands.
func TestSkillSlashCommandsMatchThePinnedReferenceTest(t *testing.T) {
	l := runtime.NewSkillsLoader(filepath.Join(skillFixtures, "pinned"))
	regs, err := l.SlashCommands()
	require.NoError(t, err)
	require.Equal(t, []runtime.SlashCommandRegistration{
		{Definition: runtime.SlashCommand{Name: "init", Description: skStrp("Scaffold a project"),
			Arguments: []runtime.SlashCommandArgument{{Name: "project_name", Type: "string", Required: skBoolp(false),
				Description: skStrp("[project-name]")}}}},
		{Definition: runtime.SlashCommand{Name: "quickstart", Description: skStrp("Guided quickstart")}},
	}, regs)

	skills, err := l.Skills()
	require.NoError(t, err)
	require.Equal(t, []string{"BadName", "init", "internal", "quickstart"}, skillNames(skills))
	internal := findSkill(t, skills, "internal")
	require.False(t, internal.UserInvocable)
	require.Equal(t, "Internal helper", internal.Description)
	require.Equal(t, "Never directly", internal.WhenToUse)
	require.Empty(t, internal.Keywords)
	require.True(t, findSkill(t, skills, "BadName").UserInvocable, "excluded for its name, not for invocability")

	qs := findSkill(t, skills, "quickstart")
	abs, err := filepath.Abs(filepath.Join(skillFixtures, "pinned", "quickstart", "SKILL.md"))
	require.NoError(t, err)
	require.Equal(t, runtime.Skill{Name: "quickstart", Description: "Guided quickstart",
		WhenToUse: "User wants a tutorial", Content: "# Quickstart\nArguments: $ARGUMENTS\n", Path: abs,
		Keywords: []string{"quickstart"}, UserInvocable: true}, qs)
	init := findSkill(t, skills, "init")
	require.Equal(t, []string{"project_name", "Bad-Arg"}, init.Arguments)
	require.Equal(t, "[project-name]", init.ArgumentHint, "an unquoted [hint] stays a string")
}

func TestSkillArgumentsOnlyInvalidGiveAnEmptyArgumentList(t *testing.T) {
	dir := t.TempDir()
	writeSkillFile(t, filepath.Join(dir, "odd.md"), "---\narguments: [Bad-Arg, 9lives]\n---\nx\n")
	regs, err := runtime.NewSkillsLoader(dir).SlashCommands()
	require.NoError(t, err)
	require.Len(t, regs, 1)
	require.NotNil(t, regs[0].Arguments, "the reference keeps arguments: [] when it declared some")
	require.Empty(t, regs[0].Arguments)
	require.Equal(t, "Odd", *regs[0].Description, "the description defaults to the humanized name")
}

func TestSkillEmptyRegistryHasNoCommands(t *testing.T) {
	for _, l := range []*runtime.SkillsLoader{
		runtime.NewSkillsLoader(),
		runtime.NewSkillsLoader(""),
		runtime.NewSkillsLoader(filepath.Join(t.TempDir(), "missing")),
	} {
		regs, err := l.SlashCommands()
		require.NoError(t, err)
		require.NotNil(t, regs, "ReplaceOwned(owner, []) with an empty list, not nil")
		require.Empty(t, regs)
		skills, err := l.Skills()
		require.NoError(t, err)
		require.Empty(t, skills)
	}
}

func TestSkillDirectoriesReferencesAndOverrides(t *testing.T) {
	refs := filepath.Join(skillFixtures, "refs")
	skills, err := runtime.NewSkillsLoader(refs).Skills()
	require.NoError(t, err)
	require.Equal(t, []string{"nested", "notes", "plain", "search"}, skillNames(skills),
		"a SKILL.md names its directory; the other .md files of a skill's directory are references")

	search := findSkill(t, skills, "search")
	require.Equal(t, "Search the stream", search.Description)
	require.Equal(t, "The user wants to find events", search.WhenToUse)
	require.Equal(t, []string{"search", "find"}, search.Keywords)
	require.Equal(t, []string{"query", "scope"}, search.Arguments)
	require.Equal(t, "<query> [scope]", search.ArgumentHint)
	require.True(t, search.UserInvocable)
	abs, _ := filepath.Abs(filepath.Join(refs, "search"))
	require.Equal(t, abs, search.Dir())
	require.Equal(t, []runtime.SkillReference{
		{Name: "syntax.md", Path: filepath.Join(abs, "syntax.md"),
			Content: "# Query syntax\nQuote a phrase to search for it exactly.\n"},
		{Name: "examples/basic.md", Path: filepath.Join(abs, "examples", "basic.md"),
			Content: "# Basic example\n/search \"deploy failed\" errors\n"},
	}, search.References)

	notes := findSkill(t, skills, "notes")
	require.True(t, notes.UserInvocable, "user-invocable: yes")
	require.Equal(t, strings.TrimSuffix(notes.Path, ".md"), notes.Dir())
	require.Len(t, notes.References, 1, "a flat skill's references live in the directory named after it")
	require.Equal(t, "style.md", notes.References[0].Name)

	plain := findSkill(t, skills, "plain")
	require.Equal(t, runtime.Skill{Name: "plain", Description: "Plain", WhenToUse: "User asks about plain",
		Content: "# Plain\nA skill without front matter.\n", Path: plain.Path, Keywords: []string{"plain"},
		UserInvocable: true}, plain)

	require.Empty(t, findSkill(t, skills, "nested").References)

	// A later directory wins a name.
	skills, err = runtime.NewSkillsLoader(filepath.Join(skillFixtures, "pinned"), filepath.Join(skillFixtures, "override")).Skills()
	require.NoError(t, err)
	require.Equal(t, "Overridden quickstart", findSkill(t, skills, "quickstart").Description)
	require.Equal(t, "# Quickstart (override)\n", findSkill(t, skills, "quickstart").Content)
	skills, err = runtime.NewSkillsLoader(filepath.Join(skillFixtures, "override"), filepath.Join(skillFixtures, "pinned")).Skills()
	require.NoError(t, err)
	require.Equal(t, "Guided quickstart", findSkill(t, skills, "quickstart").Description)
}

func TestSkillScanSkipsNodeModulesAndGit(t *testing.T) {
	dir := t.TempDir()
	writeSkillFile(t, filepath.Join(dir, "node_modules", "pkg", "skills", "leak", "SKILL.md"), "leak\n")
	writeSkillFile(t, filepath.Join(dir, ".git", "hooks.md"), "leak\n")
	writeSkillFile(t, filepath.Join(dir, "a", "b", "deep", "SKILL.md"), "deep\n")
	writeSkillFile(t, filepath.Join(dir, "a", "readme.txt"), "not markdown\n")
	writeSkillFile(t, filepath.Join(dir, "deep", "node_modules", "x.md"), "leak\n")
	writeSkillFile(t, filepath.Join(dir, "deep", ".git", "y.md"), "leak\n")
	target := filepath.Join(t.TempDir(), "linked.md")
	writeSkillFile(t, target, "---\ndescription: through a symlink\n---\n")
	require.NoError(t, os.Symlink(target, filepath.Join(dir, "linked.md")))
	require.NoError(t, os.Symlink(filepath.Join(dir, "a"), filepath.Join(dir, "loop")))

	skills, err := runtime.NewSkillsLoader(dir).Skills()
	require.NoError(t, err)
	require.Equal(t, []string{"deep", "linked"}, skillNames(skills))
	require.Empty(t, findSkill(t, skills, "deep").References, "node_modules and .git hold no references either")
	require.Equal(t, "through a symlink", findSkill(t, skills, "linked").Description)
}

func TestSkillFrontMatter(t *testing.T) {
	cases := []struct {
		name, file string
		check      func(t *testing.T, s runtime.Skill)
	}{
		{"inline lists with quotes", "---\nkeywords: [a, \"b, c\", 'd', ]\narguments: [x,y]\n---\nbody\n", func(t *testing.T, s runtime.Skill) {
			require.Equal(t, []string{"a", "b, c", "d"}, s.Keywords)
			require.Equal(t, []string{"x", "y"}, s.Arguments)
			require.Equal(t, "body\n", s.Content)
		}},
		{"block lists", "---\nkeywords:\n  - one\n  - \"two # not a comment\"   # a comment\n\narguments:\n- first\n- 'second'\ndescription: after\n---\n", func(t *testing.T, s runtime.Skill) {
			require.Equal(t, []string{"one", "two # not a comment"}, s.Keywords)
			require.Equal(t, []string{"first", "second"}, s.Arguments)
			require.Equal(t, "after", s.Description)
		}},
		{"comma separated keywords", "---\nkeywords: a, b ,c\n---\n", func(t *testing.T, s runtime.Skill) {
			require.Equal(t, []string{"a", "b", "c"}, s.Keywords)
		}},
		{"quoted strings", "---\ndescription: \"Say \\\"hi\\\"\\tnow: \\u00e9\"\nwhenToUse: 'it''s # fine'\nargument-hint: \"<query>\"\n---\n", func(t *testing.T, s runtime.Skill) {
			require.Equal(t, "Say \"hi\"\tnow: \u00e9", s.Description)
			require.Equal(t, "it's # fine", s.WhenToUse)
			require.Equal(t, "<query>", s.ArgumentHint)
		}},
		// The hand-written parser this replaced also read an unquoted "Find things: fast";
		// in YAML a plain value cannot contain ": ", so it must be quoted (see the errors
		// test below for what the unquoted one gives).
		{"comments and colons", "---\n# a comment line\ndescription: \"Find things: fast\" # comment\n---\n", func(t *testing.T, s runtime.Skill) {
			require.Equal(t, "Find things: fast", s.Description)
			require.NoError(t, s.FrontMatterErr)
		}},
		{"booleans false", "---\nuser-invocable: false\n---\n", func(t *testing.T, s runtime.Skill) {
			require.False(t, s.UserInvocable)
		}},
		{"booleans no and quoted", "---\nuser_invocable: \"no\"\n---\n", func(t *testing.T, s runtime.Skill) {
			require.False(t, s.UserInvocable)
		}},
		{"booleans True", "---\nuserInvocable: True\n---\n", func(t *testing.T, s runtime.Skill) {
			require.True(t, s.UserInvocable)
		}},
		{"booleans YAML 1.1 words", "---\nuser-invocable: off\n---\n", func(t *testing.T, s runtime.Skill) {
			require.False(t, s.UserInvocable)
		}},
		{"folded block", "---\ndescription: >\n  one\n  two\n\n  three\nwhen_to_use: |\n  line one\n  line two\n---\n", func(t *testing.T, s runtime.Skill) {
			require.Equal(t, "one two\nthree", s.Description)
			require.Equal(t, "line one\nline two", s.WhenToUse)
		}},
		{"plain continuation", "---\ndescription: a long\n  description\n---\n", func(t *testing.T, s runtime.Skill) {
			require.Equal(t, "a long description", s.Description)
		}},
		{"no front matter", "# Title\n---\ndescription: no\n---\n", func(t *testing.T, s runtime.Skill) {
			require.Equal(t, "Case", s.Description)
			require.Equal(t, "# Title\n---\ndescription: no\n---\n", s.Content)
		}},
		{"unclosed front matter", "---\ndescription: never closed\n", func(t *testing.T, s runtime.Skill) {
			require.Equal(t, "Case", s.Description)
			require.Equal(t, "---\ndescription: never closed\n", s.Content)
		}},
		{"CRLF and BOM", "\ufeff---\r\ndescription: windows\r\nkeywords: [a, b]\r\n---\r\n\r\nbody\r\n", func(t *testing.T, s runtime.Skill) {
			require.Equal(t, "windows", s.Description)
			require.Equal(t, []string{"a", "b"}, s.Keywords)
			require.Equal(t, "body\r\n", s.Content)
		}},
		{"empty front matter", "---\n---\nbody", func(t *testing.T, s runtime.Skill) {
			require.Equal(t, "body", s.Content)
			require.Equal(t, []string{"case"}, s.Keywords)
		}},
		{"dots close", "---\ndescription: d\n...\nbody\n", func(t *testing.T, s runtime.Skill) {
			require.Equal(t, "d", s.Description)
			require.Equal(t, "body\n", s.Content)
		}},
		{"flow list as text", "---\nargument-hint: [pr, priority]\ndescription:\n  - one\n  - two\n---\n", func(t *testing.T, s runtime.Skill) {
			require.Equal(t, "[pr, priority]", s.ArgumentHint, "an unquoted [hint] is a YAML list, read back as written")
			require.Equal(t, "one, two", s.Description)
		}},
		{"anchors, aliases and merge keys", "---\nshared: &words [alpha, beta]\nkeywords: *words\n" +
			"defaults: &d {description: merged, whenToUse: merged too}\n<<: *d\ndescription: own\n---\n", func(t *testing.T, s runtime.Skill) {
			require.Equal(t, []string{"alpha", "beta"}, s.Keywords)
			require.Equal(t, "own", s.Description, "a key of the mapping itself wins over a merged one")
			require.Equal(t, "merged too", s.WhenToUse)
		}},
		{"other tools' keys are ignored whatever their value", "---\nname: x\nallowed-tools: [Read, Grep]\n" +
			"metadata:\n  owner: {team: a, tags: [x, [y]]}\ndescription: kept\n---\n", func(t *testing.T, s runtime.Skill) {
			require.NoError(t, s.FrontMatterErr)
			require.Equal(t, "kept", s.Description)
		}},
		{"null values give the defaults", "---\ndescription:\nkeywords: ~\nwhenToUse: null\n---\n", func(t *testing.T, s runtime.Skill) {
			require.Equal(t, "Case", s.Description)
			require.Empty(t, s.Keywords, "keywords given as null: an empty list, like the reference's `keywords:` without items")
			require.Equal(t, "User asks about case", s.WhenToUse)
		}},
		{"comments only", "---\n# nothing here\n---\nbody\n", func(t *testing.T, s runtime.Skill) {
			require.NoError(t, s.FrontMatterErr)
			require.Equal(t, "body\n", s.Content)
			require.True(t, s.UserInvocable)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeSkillFile(t, filepath.Join(dir, "case.md"), c.file)
			skills, err := runtime.NewSkillsLoader(dir).Skills()
			require.NoError(t, err)
			require.Len(t, skills, 1)
			c.check(t, skills[0])
		})
	}
}

// Front matter that is not YAML, or gives a key a value of the wrong kind, is not used:
// the error names the file's line, the skill keeps its body and the defaults, and it is
// not published as a command (its front matter may have said user-invocable: false).
func TestSkillFrontMatterErrors(t *testing.T) {
	cases := []struct{ name, file, err string }{
		{"unquoted colon", "---\n# a comment line\ndescription: Find things: fast\n---\nbody\n",
			"front matter: yaml: line 3: mapping values are not allowed in this context"},
		{"not a boolean", "---\ndescription: d\nuser-invocable: maybe\n---\nbody\n",
			`front matter: line 3: user-invocable: must be true or false, not "maybe"`},
		{"a quoted word is still a word", "---\nuserInvocable: \"sometimes\"\n---\nbody\n",
			`front matter: line 2: user-invocable: must be true or false, not "sometimes"`},
		{"a mapping for a list", "---\nkeywords:\n  a: 1\n---\nbody\n",
			"front matter: line 3: keywords: must be a list, not a mapping"},
		{"a nested list item", "---\n\narguments: [a, [b]]\n---\nbody\n",
			"front matter: line 3: arguments: list items must be text, not a list"},
		{"a mapping for text", "---\nwhen_to_use: {a: b}\n---\nbody\n",
			"front matter: line 2: whenToUse: must be text, not a mapping"},
		{"a key given twice", "---\ndescription: a\nkeywords: []\ndescription: b\n---\nbody\n",
			"front matter: yaml: unmarshal errors:\n  line 4: mapping key \"description\" already defined at line 2"},
		{"not a mapping", "---\njust some text\n---\nbody\n",
			"front matter: line 2: must be a mapping of keys to values, not a scalar"},
		{"a list", "---\n- a\n---\nbody\n",
			"front matter: line 2: must be a mapping of keys to values, not a list"},
		// The library numbers a parser error (as opposed to a scanner error) by the line
		// before the construct it was parsing: the list is on line 3.
		{"unclosed flow list", "\ufeff---\r\ndescription: d\r\nkeywords: [a, b\r\n---\r\nbody\n",
			"front matter: yaml: line 2: did not find expected ',' or ']'"},
		{"tab indentation", "---\nkeywords:\n\t- a\n---\nbody\n",
			"front matter: yaml: line 3: found character that cannot start any token"},
		{"too long", "---\ndescription: " + strings.Repeat("x", 16<<10) + "\n---\nbody\n",
			"front matter: longer than 16384 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeSkillFile(t, filepath.Join(dir, "case.md"), c.file)
			l := runtime.NewSkillsLoader(dir)
			skills, err := l.Skills()
			require.NoError(t, err, "one odd skill never fails the scan")
			require.Len(t, skills, 1)
			s := skills[0]
			require.EqualError(t, s.FrontMatterErr, c.err)
			require.Equal(t, runtime.Skill{Name: "case", Description: "Case", WhenToUse: "User asks about case",
				Content: "body\n", Path: s.Path, Keywords: []string{"case"}, FrontMatterErr: s.FrontMatterErr}, s)
			regs, err := l.SlashCommands()
			require.NoError(t, err)
			require.Empty(t, regs)
		})
	}
}

func TestSkillChangesArePickedUpAndUnchangedFilesAreNotReread(t *testing.T) {
	dir := copySkillDir(t, filepath.Join(skillFixtures, "pinned"))
	l := runtime.NewSkillsLoader(dir)
	other := l.Owner("other") // shares the cache
	path := filepath.Join(dir, "quickstart", "SKILL.md")
	skills, err := l.Skills()
	require.NoError(t, err)
	require.Equal(t, "Guided quickstart", findSkill(t, skills, "quickstart").Description)

	// Same size, same modification time: the loader trusts its stat and does not read the
	// file again, so it still has the old text.
	info, err := os.Stat(path)
	require.NoError(t, err)
	old, err := os.ReadFile(path)
	require.NoError(t, err)
	same := bytes.Replace(old, []byte("Guided quickstart"), []byte("Guided quickstarT"), 1)
	require.Len(t, same, len(old))
	require.NoError(t, os.WriteFile(path, same, 0o644))
	require.NoError(t, os.Chtimes(path, info.ModTime(), info.ModTime()))
	skills, err = other.Skills()
	require.NoError(t, err)
	require.Equal(t, "Guided quickstart", findSkill(t, skills, "quickstart").Description, "not re-read")

	// A new modification time: read again.
	later := info.ModTime().Add(time.Second)
	require.NoError(t, os.Chtimes(path, later, later))
	skills, err = l.Skills()
	require.NoError(t, err)
	require.Equal(t, "Guided quickstarT", findSkill(t, skills, "quickstart").Description)

	// An edit that changes the size, a new skill, a removed one.
	writeSkillFile(t, path, "---\ndescription: Edited\n---\n# New text $ARGUMENTS\n")
	writeSkillFile(t, filepath.Join(dir, "fresh.md"), "---\ndescription: Fresh\n---\n")
	require.NoError(t, os.Remove(filepath.Join(dir, "init.md")))
	skills, err = l.Skills()
	require.NoError(t, err)
	require.Equal(t, []string{"BadName", "fresh", "internal", "quickstart"}, skillNames(skills))
	require.Equal(t, "Edited", findSkill(t, skills, "quickstart").Description)
	require.Equal(t, "# New text $ARGUMENTS\n", findSkill(t, skills, "quickstart").Content)
	regs, err := l.SlashCommands()
	require.NoError(t, err)
	require.Len(t, regs, 2)
	require.Equal(t, "fresh", regs[0].Name)
	require.Equal(t, "quickstart", regs[1].Name)

	// A reference added to a skill's directory.
	writeSkillFile(t, filepath.Join(dir, "quickstart", "more.md"), "more\n")
	skills, err = l.Skills()
	require.NoError(t, err)
	require.Len(t, findSkill(t, skills, "quickstart").References, 1)
}

// --- end to end, on a real server and Postgres -----------------------------------------

type skEvent struct {
	Type    string                     `json:"type"`
	Key     string                     `json:"key"`
	Value   map[string]json.RawMessage `json:"value"`
	Headers map[string]string          `json:"headers"`
}

type skServer struct {
	t    *testing.T
	base string
	// logs are the server's warnings and errors (also written to the test's log).
	logs *observer.ObservedLogs
}

func startSkillServer(t *testing.T, defs ...runtime.EntityDefinition) *skServer {
	t.Helper()
	observed, logs := observer.New(zap.WarnLevel)
	logger := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel), zaptest.WrapOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return zapcore.NewTee(c, observed)
	})))
	srv := testserver.Start(t, testserver.Options{Definitions: defs, Logger: logger})
	return &skServer{t: t, base: srv.URL, logs: logs}
}

func (h *skServer) do(method, path, body string) (int, []byte, http.Header) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.base+path, strings.NewReader(body))
	require.NoError(h.t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return resp.StatusCode, b, resp.Header
}

func (h *skServer) spawn(url string) {
	h.t.Helper()
	code, body, _ := h.do(http.MethodPut, "/_electric/entities"+url, `{}`)
	require.Equal(h.t, http.StatusCreated, code, "%s", body)
}

func (h *skServer) send(url, body string) {
	h.t.Helper()
	code, resp, _ := h.do(http.MethodPost, "/_electric/entities"+url+"/send", body)
	require.Less(h.t, code, 300, "%s", resp)
}

// skComposer is a composer_input whose source starts with /name.
func skComposer(source, name string) string {
	node := map[string]any{"kind": "slash_command", "start": 0, "end": len(name) + 1, "raw": "/" + name, "name": name}
	b, _ := json.Marshal(map[string]any{"type": "composer_input",
		"payload": map[string]any{"source": source, "nodes": []any{node}}})
	return string(b)
}

func (h *skServer) read(path string) []skEvent {
	h.t.Helper()
	var out []skEvent
	offset := "-1"
	for {
		code, body, hdr := h.do(http.MethodGet, path+"?offset="+offset, "")
		require.Equal(h.t, http.StatusOK, code, "%s", body)
		var evs []skEvent
		require.NoError(h.t, json.Unmarshal(body, &evs), "%s", body)
		out = append(out, evs...)
		if hdr.Get("Stream-Up-To-Date") == "true" {
			return out
		}
		offset = hdr.Get("Stream-Next-Offset")
	}
}

func (h *skServer) events(url string) []skEvent { return h.read(url + "/main") }

func skOfType(evs []skEvent, typ string) []skEvent {
	var out []skEvent
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// waitTexts waits until the entity wrote n reply texts (text_delta events: one per
// WriteText) and returns the stream.
func (h *skServer) waitTexts(url string, n int) []skEvent {
	h.t.Helper()
	var evs []skEvent
	defer func() { // also when the wait fails the test
		if h.t.Failed() {
			_, status, _ := h.do(http.MethodGet, "/_electric/entities"+url+"/wake", "")
			h.t.Logf("%s: %d reply texts, want %d; wake status %s", url, len(skOfType(evs, "text_delta")), n, status)
		}
	}()
	testwait.Until(h.t, fmt.Sprintf("%d reply texts from %s", n, url), func() bool {
		evs = h.events(url)
		return len(skOfType(evs, "text_delta")) >= n
	}, 30*time.Second)
	require.Equal(h.t, n, len(skOfType(evs, "text_delta")))
	return evs
}

func skStr(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var s string
	require.NoError(t, json.Unmarshal(raw, &s), "%s", raw)
	return s
}

func skObj(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m), "%s", raw)
	return m
}

func skTexts(t *testing.T, evs []skEvent) []string {
	var out []string
	for _, e := range skOfType(evs, "text_delta") {
		out = append(out, skStr(t, e.Value["delta"]))
	}
	return out
}

// skilledType is an entity type whose handler runs the loader on every wake and answers
// every inbox message with what it loaded.
func skilledType(typ string, l *runtime.SkillsLoader) runtime.EntityDefinition {
	return runtime.EntityDefinition{Type: typ, Description: "skills loader test", Handler: func(ctx *runtime.Context) error {
		loaded, err := l.Load(ctx)
		if err != nil {
			return err
		}
		if _, ok := ctx.Wake.(runtime.InboxWake); !ok {
			return nil
		}
		if loaded == nil {
			return ctx.WriteText("no skill")
		}
		return ctx.WriteText("loaded " + loaded.Command + " " + strings.Join(loaded.ContextIDs, ","))
	}}
}

func TestSkillsLoaderEndToEnd(t *testing.T) {
	dir := copySkillDir(t, filepath.Join(skillFixtures, "pinned"))
	broken := filepath.Join(dir, "broken.md")
	writeSkillFile(t, broken, "---\ndescription: Use when: never\n---\n")
	loader := runtime.NewSkillsLoader(dir)
	refs := runtime.NewSkillsLoader(filepath.Join(skillFixtures, "refs")).Owner("test:skills")
	h := startSkillServer(t, skilledType("skilled", loader), skilledType("skilled-refs", refs))

	const url = "/skilled/e1"
	h.spawn(url)
	h.send(url, skComposer("/quickstart with auth", "quickstart"))
	evs := h.waitTexts(url, 1)
	require.Equal(t, []string{"loaded /quickstart skill:quickstart"}, skTexts(t, evs))

	// The skills' commands, owned by "skills".
	cmds := skOfType(evs, "slash_command")
	require.Len(t, cmds, 2, "init and quickstart, registered once (at spawn)")
	require.Equal(t, "init", cmds[0].Key)
	require.Equal(t, "quickstart", cmds[1].Key)
	for _, c := range cmds {
		require.Equal(t, "insert", c.Headers["operation"])
		require.Equal(t, "dynamic", skStr(t, c.Value["source"]))
		require.Equal(t, "skills", skStr(t, c.Value["owner"]))
	}
	require.JSONEq(t, `[{"name":"project_name","type":"string","required":false,"description":"[project-name]"}]`,
		string(cmds[0].Value["arguments"]))
	require.Equal(t, "Guided quickstart", skStr(t, cmds[1].Value["description"]))

	// The skill in context, its $ARGUMENTS substituted, with provenance.
	inserted := skOfType(evs, "context_inserted")
	require.Len(t, inserted, 1)
	ins := inserted[0]
	require.Equal(t, "skill:quickstart", ins.Key)
	require.Equal(t, "skill:quickstart", skStr(t, ins.Value["id"]))
	require.Equal(t, "skill_instructions", skStr(t, ins.Value["name"]))
	require.Equal(t, "# Quickstart\nArguments: with auth\n", skStr(t, ins.Value["content"]))
	require.Equal(t, map[string]any{"skill": "quickstart", "type": "directive"}, skObj(t, ins.Value["attrs"]))
	msgKey := skOfType(evs, "inbox")[0].Key
	require.Equal(t, map[string]any{"source": "composer_input", "command": "/quickstart",
		"raw_input": "/quickstart with auth", "arguments": "with auth", "message_key": msgKey},
		skObj(t, ins.Value["provenance"]))

	// The same command again and a plain message: the skills loader writes no events on
	// a repeated wake with unchanged skills, and the skill is not inserted twice.
	before := len(evs)
	collection := len(h.read(url + "/slash-commands"))
	h.send(url, skComposer("/quickstart with auth", "quickstart"))
	h.send(url, `{"payload":{"text":"hello"}}`)
	evs = h.waitTexts(url, 3)
	require.Equal(t, []string{"loaded /quickstart skill:quickstart", "no skill", "no skill"}, skTexts(t, evs))
	require.Len(t, skOfType(evs, "slash_command"), 2)
	require.Len(t, skOfType(evs, "context_inserted"), 1)
	for _, e := range evs[before:] {
		require.Contains(t, []string{"inbox", "run", "text", "text_delta"}, e.Type, "only the messages and the replies: %+v", e)
	}
	require.Len(t, h.read(url+"/slash-commands"), collection, "nothing new in the slash-commands collection")

	// The skill with broken front matter is no command (above) and was logged once over
	// the wakes so far.
	problems := h.logs.FilterMessageSnippet("skill front matter not used").AllUntimed()
	require.Len(t, problems, 1)
	require.Equal(t, broken, problems[0].ContextMap()["path"])
	require.Equal(t, "front matter: yaml: line 2: mapping values are not allowed in this context",
		problems[0].ContextMap()["error"])

	// No skills any more: ReplaceOwned(owner, []) removes the commands it owned.
	require.NoError(t, os.RemoveAll(dir))
	h.send(url, `{"payload":{"text":"and now?"}}`)
	evs = h.waitTexts(url, 4)
	cmds = skOfType(evs, "slash_command")
	require.Len(t, cmds, 4)
	for _, c := range cmds[2:] {
		require.Equal(t, "delete", c.Headers["operation"])
	}
	require.ElementsMatch(t, []string{"init", "quickstart"}, []string{cmds[2].Key, cmds[3].Key})
	code, body, _ := h.do(http.MethodGet, "/_electric/entities"+url+"/slash-commands", "")
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, string(body), "quickstart")

	// Another owner, references, and arguments split with quotes.
	const rurl = "/skilled-refs/r1"
	h.spawn(rurl)
	h.send(rurl, skComposer(`/search "exact phrase" events`, "search"))
	evs = h.waitTexts(rurl, 1)
	require.Equal(t, []string{"loaded /search skill:search,skill:search:syntax.md,skill:search:examples/basic.md"},
		skTexts(t, evs))
	var owned []string
	for _, c := range skOfType(evs, "slash_command") {
		require.Equal(t, "test:skills", skStr(t, c.Value["owner"]))
		owned = append(owned, c.Key)
	}
	require.Equal(t, []string{"nested", "notes", "plain", "search"}, owned)
	inserted = skOfType(evs, "context_inserted")
	require.Len(t, inserted, 3)
	require.Equal(t, "Search for exact phrase in events.\nAll arguments: \"exact phrase\" events. "+
		"First: exact phrase, second: events, third: $2.\nPrices like $5 stay.\n", skStr(t, inserted[0].Value["content"]))
	require.Equal(t, "skill:search:syntax.md", inserted[1].Key)
	require.Equal(t, "skill_reference", skStr(t, inserted[1].Value["name"]))
	require.Equal(t, map[string]any{"skill": "search", "file": "syntax.md"}, skObj(t, inserted[1].Value["attrs"]))
	require.Equal(t, "# Query syntax\nQuote a phrase to search for it exactly.\n", skStr(t, inserted[1].Value["content"]))
	require.Equal(t, "skill:search:examples/basic.md", inserted[2].Key)
	require.Equal(t, "/search", skObj(t, inserted[2].Value["provenance"])["command"])

	// A second skill; its content has no placeholder, so the arguments are appended.
	h.send(rurl, skComposer("/notes keep it short", "notes"))
	evs = h.waitTexts(rurl, 2)
	require.Equal(t, "loaded /notes skill:notes,skill:notes:style.md", skTexts(t, evs)[1])
	inserted = skOfType(evs, "context_inserted")
	require.Len(t, inserted, 5)
	require.Equal(t, "skill:notes", inserted[3].Key)
	require.Equal(t, "Write the notes down.\n\nArguments: keep it short\n", skStr(t, inserted[3].Value["content"]))
	require.Equal(t, "# Note style\nShort sentences.\n", skStr(t, inserted[4].Value["content"]))
	require.Len(t, skOfType(evs, "slash_command"), 4)
}
