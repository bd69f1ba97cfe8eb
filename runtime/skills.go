package runtime

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/entityd/entityd/slashcmd"
	"github.com/entityd/entityd/wire/composer"
)

// The skills loader is the Go counterpart of the reference's createSkillsRegistry,
// buildSkillSlashCommands and createContextSkillLoader. A skill is a markdown file:
//
//	skills/
//	  quickstart/SKILL.md        the skill "quickstart" (a SKILL.md is named after its directory)
//	  search/SKILL.md            the skill "search"…
//	  search/syntax.md           …and one of its references (skill:search:syntax.md)
//	  entityd-api.md             the skill "entityd-api" (any other .md is named after its file)
//	  entityd-api/endpoints.md   …and its references, in a directory named after it
//
// A skill may start with a front-matter block of YAML (see skills_frontmatter.go):
//
//	---
//	description: Search the stream            (default: the name, humanized)
//	whenToUse: The user wants to find events  (also when_to_use; default "User asks about …")
//	keywords: [search, stream]                (default: [name])
//	arguments: [query]                        (an inline or a block list)
//	argument-hint: <query>
//	user-invocable: false                     (default: true)
//	---
//
// Where the reference leaves room, this loader decides:
//   - The other .md files of a skill's directory (a SKILL.md's directory, or the directory
//     named after a flat skill file) are that skill's references, not skills of their own;
//     a subdirectory that has a SKILL.md is a separate skill.
//   - Every directory given to NewSkillsLoader is an "app" directory in the reference's
//     terms: skills are user-invocable unless the front matter says `user-invocable: false`
//     (the reference cannot turn the default off with `false`).
//   - Skill.Content and the context entry are the body after the front matter.
//   - $ARGUMENTS always becomes the arguments (also when there are none), a declared
//     $<argname> becomes its positional value or nothing, $0, $1, … are replaced only when
//     that many arguments were given (so "$5" in prose survives); when arguments were given
//     and no placeholder used them, "Arguments: <args>" is appended after a blank line, like
//     the reference.
//   - Symbolic links to files are followed, to directories not (no cycles).
//   - Front matter that is not valid YAML, or gives a key above a value of the wrong
//     kind, is not used at all: the skill keeps the defaults, is not user-invocable (its
//     front matter may have said so), and its FrontMatterErr says why with the line;
//     Load logs it once per file version. The reference's line reader accepts more
//     (e.g. an unquoted "a: b" value), but guesses where YAML would refuse.
//   - Commands stay within slashcmd.DefaultLimits (a longer name excludes the skill, a
//     longer description is cut, extra or duplicate arguments are dropped), so one odd
//     skill never makes the whole ReplaceOwned fail.

// DefaultSkillsOwner owns the slash commands a SkillsLoader registers (the reference's
// default slashCommandOwner).
const DefaultSkillsOwner = "skills"

// Skill is one skill file.
type Skill struct {
	// Name is the file's name without .md, or the directory's name for a SKILL.md.
	Name         string
	Description  string
	WhenToUse    string
	ArgumentHint string
	// Content is the file's text after the front matter.
	Content string
	// Path is the file's absolute path.
	Path          string
	Keywords      []string
	Arguments     []string
	UserInvocable bool
	// References are the other .md files in the skill's directory, by relative path.
	References []SkillReference
	// FrontMatterErr is why the front matter was not used (nil when it was, or when
	// there is none); it names the line, e.g. "front matter: yaml: line 3: …".
	FrontMatterErr error
}

// Dir is the skill's directory, where its references are: the directory of a SKILL.md,
// or for another file the directory named after it (skills/notes.md → skills/notes).
func (s Skill) Dir() string {
	if filepath.Base(s.Path) == skillFileName {
		return filepath.Dir(s.Path)
	}
	return strings.TrimSuffix(s.Path, ".md")
}

// SkillReference is a reference file of a skill; Name is its path relative to the
// skill's directory, with forward slashes (e.g. "syntax.md", "examples/basic.md").
type SkillReference struct {
	Name, Path, Content string
}

// LoadedSkill is the skill a Load put into context.
type LoadedSkill struct {
	Skill Skill
	// Command is the command that named it ("/quickstart").
	Command string
	// Arguments is the text after the command, trimmed.
	Arguments string
	// Content is the instructions as inserted (the arguments substituted).
	Content string
	// ContextIDs are the context entries inserted: "skill:<name>", then one
	// "skill:<name>:<file>" per reference.
	ContextIDs []string
}

// ActivationText is the reference's "SKILL ACTIVATED" source for a model: the
// instructions with their reference files, ready to put in front of a model run.
func (s *LoadedSkill) ActivationText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "SKILL ACTIVATED: %q. The instructions below override your default behavior. "+
		"Follow them exactly. Do not read any files to find this content — it is all here.\n", s.Skill.Name)
	if len(s.Skill.References) > 0 {
		fmt.Fprintf(&b, "\nSkill directory: %s", s.Skill.Dir())
	}
	b.WriteString("\n\n")
	b.WriteString(s.Content)
	for _, r := range s.Skill.References {
		fmt.Fprintf(&b, "\n\n--- %s ---\n%s", r.Name, r.Content)
	}
	return b.String()
}

// SkillsLoader publishes the skills of some directories as slash commands and loads a
// skill into an entity's context when a composer_input invokes it. It is safe for
// concurrent use by many handlers; share one per set of directories.
//
//	skills := runtime.NewSkillsLoader("./skills")
//	def := runtime.EntityDefinition{Type: "assistant", Handler: func(ctx *runtime.Context) error {
//		loaded, err := skills.Load(ctx) // every wake: commands in sync, invoked skill in context
//		if err != nil {
//			return err
//		}
//		if loaded != nil {
//			prompt := loaded.ActivationText() // e.g. for a model run
//			…
//		}
//		…
//	}}
//
// Scans are cheap when nothing changed: every call lists the directories and stats the
// .md files, and only files whose size or modification time changed are read again
// (front matter is parsed once per distinct content, by content hash).
type SkillsLoader struct {
	owner string
	c     *skillsCache
}

// NewSkillsLoader returns a loader over dirs, scanned recursively for *.md files
// (node_modules and .git are skipped). When two skills have one name, the later
// directory wins. A directory that does not exist has no skills; "" is ignored.
func NewSkillsLoader(dirs ...string) *SkillsLoader {
	c := &skillsCache{files: map[string]cachedSkillFile{}, parsed: map[[32]byte]*parsedSkill{}}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if abs, err := filepath.Abs(d); err == nil {
			d = abs
		}
		c.dirs = append(c.dirs, d)
	}
	return &SkillsLoader{owner: DefaultSkillsOwner, c: c}
}

// Owner returns a loader over the same skills (and cache) that registers its commands
// as owner (DefaultSkillsOwner, "skills", by default).
func (l *SkillsLoader) Owner(owner string) *SkillsLoader {
	if owner == "" {
		owner = DefaultSkillsOwner
	}
	return &SkillsLoader{owner: owner, c: l.c}
}

// Skills returns every skill, sorted by name. The slices inside are shared between calls:
// treat them as read-only.
func (l *SkillsLoader) Skills() ([]Skill, error) {
	skills, err := l.c.scan()
	if err != nil {
		return nil, err
	}
	return slices.Clone(skills), nil
}

// SlashCommands are the registrations buildSkillSlashCommands makes: one per
// user-invocable skill with a valid command name, sorted by name, with the skill's
// description; a skill that declares arguments gets those with valid argument names, as
// {type: string, required: false, description: the skill's argument-hint}.
func (l *SkillsLoader) SlashCommands() ([]SlashCommandRegistration, error) {
	skills, err := l.c.scan()
	if err != nil {
		return nil, err
	}
	return skillSlashCommands(skills), nil
}

// Load is meant for the top of every wake. It makes the loader's owner register exactly
// the skills' commands (ctx.SlashCommands.ReplaceOwned, which writes nothing when they
// are unchanged, and removes them all when there are no skills). Then, when the wake is
// a composer_input whose first slash_command names a user-invocable skill that is not in
// context yet, it inserts the context entry "skill:<name>" (name skill_instructions,
// attrs {skill, type: directive}, its arguments substituted, provenance {source:
// composer_input, command, raw_input, arguments, message_key}) and one entry
// "skill:<name>:<file>" per reference file, and returns what it loaded. It returns nil
// when it loaded nothing, so a skill already in context is never inserted twice. Call it
// once per wake: a second call in the same run does not see the first one's inserts.
func (l *SkillsLoader) Load(ctx *Context) (*LoadedSkill, error) {
	skills, err := l.c.scan()
	if err != nil {
		return nil, err
	}
	for path, err := range l.c.takeProblems() {
		if ctx.Log != nil {
			ctx.Log.Warn("skill front matter not used: the skill has the defaults and is not user-invocable",
				zap.String("path", path), zap.Error(err))
		}
	}
	if err := ctx.SlashCommands.ReplaceOwned(l.owner, skillSlashCommands(skills)); err != nil {
		return nil, fmt.Errorf("runtime: skills: register commands: %w", err)
	}
	msg, ok := ctx.Wake.(InboxWake)
	if !ok {
		return nil, nil
	}
	ci, ok := msg.ComposerInput()
	if !ok {
		return nil, nil
	}
	node, ok := ci.FirstSlashCommand()
	if !ok {
		return nil, nil
	}
	i, found := sort.Find(len(skills), func(i int) int { return strings.Compare(node.Name, skills[i].Name) })
	if !found || !skills[i].UserInvocable {
		return nil, nil
	}
	skill := skills[i]
	id := "skill:" + skill.Name
	if ctx.HasContext(id) {
		return nil, nil
	}
	args := strings.TrimSpace(ci.TextAfterNode(node))
	provenance := func() map[string]any {
		return map[string]any{"source": "composer_input", "command": "/" + skill.Name, "raw_input": ci.Source,
			"arguments": args, "message_key": msg.Key}
	}
	loaded := &LoadedSkill{Skill: skill, Command: "/" + skill.Name, Arguments: args,
		Content: substituteSkillArguments(skill.Content, args, skill.Arguments)}
	err = ctx.InsertContext(ContextEntry{ID: id, Name: "skill_instructions", Content: loaded.Content,
		Attrs: map[string]any{"skill": skill.Name, "type": "directive"}, Provenance: provenance()})
	if err != nil {
		return nil, err
	}
	loaded.ContextIDs = append(loaded.ContextIDs, id)
	for _, ref := range skill.References {
		refID := id + ":" + ref.Name
		err := ctx.InsertContext(ContextEntry{ID: refID, Name: "skill_reference", Content: ref.Content,
			Attrs: map[string]any{"skill": skill.Name, "file": ref.Name}, Provenance: provenance()})
		if err != nil {
			return nil, err
		}
		loaded.ContextIDs = append(loaded.ContextIDs, refID)
	}
	return loaded, nil
}

// skillSlashCommands is buildSkillSlashCommands over skills sorted by name.
func skillSlashCommands(skills []Skill) []SlashCommandRegistration {
	limits := slashcmd.DefaultLimits
	regs := []SlashCommandRegistration{}
	for _, s := range skills {
		if !s.UserInvocable || !composer.ValidCommandName(s.Name) || utf8.RuneCountInString(s.Name) > limits.MaxNameLength {
			continue
		}
		reg := SlashCommandRegistration{Definition: slashcmd.Definition{Name: s.Name}}
		if s.Description != "" {
			reg.Description = ptr(truncateRunes(s.Description, limits.MaxDescriptionLength))
		}
		if len(s.Arguments) > 0 {
			reg.Arguments = []SlashCommandArgument{}
			seen := map[string]bool{}
			for _, name := range s.Arguments {
				if !composer.ValidArgumentName(name) || utf8.RuneCountInString(name) > limits.MaxNameLength ||
					seen[name] || len(reg.Arguments) >= limits.MaxArguments {
					continue
				}
				seen[name] = true
				arg := SlashCommandArgument{Name: name, Type: slashcmd.ArgString, Required: ptr(false)}
				if s.ArgumentHint != "" {
					arg.Description = ptr(truncateRunes(s.ArgumentHint, limits.MaxDescriptionLength))
				}
				reg.Arguments = append(reg.Arguments, arg)
			}
		}
		if slashcmd.ValidateRegistrations([]SlashCommandRegistration{reg}, "", limits) != nil {
			continue // not expected after the checks above; never let one skill fail them all
		}
		regs = append(regs, reg)
	}
	return regs
}

func ptr[T any](v T) *T { return &v }

func truncateRunes(s string, n int) string {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// splitSkillArguments splits arguments on whitespace outside quotes; a quote (' or ")
// groups until the same quote closes it and is dropped (the reference's parseArgs).
func splitSkillArguments(raw string) []string {
	var out []string
	var cur strings.Builder
	var quote rune
	for _, r := range raw {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote = r
		case unicode.IsSpace(r):
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// substituteSkillArguments fills the placeholders of a skill's content in one pass (a
// substituted value is never substituted again): $ARGUMENTS, $<argname> of the declared
// arguments (by position), and $0, $1, … (only those given).
func substituteSkillArguments(content, raw string, names []string) string {
	parsed := splitSkillArguments(raw)
	index := map[string]int{}
	var alts []string
	for i, n := range names {
		// A name that is not UTF-8 could never be written in a composer; it would only
		// make the pattern fail to compile.
		if _, dup := index[n]; n == "" || dup || !utf8.ValidString(n) {
			continue
		}
		index[n] = i
		alts = append(alts, n)
	}
	sort.SliceStable(alts, func(i, j int) bool { return len(alts[i]) > len(alts[j]) }) // longest name first
	re := skillArgumentsPattern(alts)
	matched := false
	out := re.ReplaceAllStringFunc(content, func(m string) string {
		sub := re.FindStringSubmatch(m)
		switch {
		case sub[1] != "":
			matched = true
			return raw
		case sub[2] != "":
			n, err := strconv.Atoi(sub[2])
			if err != nil || n >= len(parsed) {
				return m
			}
			matched = true
			return parsed[n]
		default:
			matched = true
			if i := index[sub[3]]; i < len(parsed) {
				return parsed[i]
			}
			return ""
		}
	})
	if raw != "" && !matched {
		out = strings.TrimRightFunc(out, unicode.IsSpace) + "\n\nArguments: " + raw + "\n"
	}
	return out
}

// skillArgumentsPattern matches $ARGUMENTS, $<digits> and $<name> for the declared names
// (longest first). Names make the pattern only as large as a skill file declares; if the
// pattern cannot be compiled (too many or too long names), the names are left out rather
// than failing the wake.
func skillArgumentsPattern(names []string) *regexp.Regexp {
	const fixed = `\$(?:(ARGUMENTS)|([0-9]+)\b`
	if len(names) > 0 {
		quoted := make([]string, len(names))
		for i, n := range names {
			quoted[i] = regexp.QuoteMeta(n)
		}
		if re, err := regexp.Compile(fixed + `|(` + strings.Join(quoted, "|") + `)\b)`); err == nil {
			return re
		}
	}
	return regexp.MustCompile(fixed + `)`)
}

// skillsCache holds what the last scan found; all of a loader's owners share it.
type skillsCache struct {
	dirs []string

	mu      sync.Mutex
	stamps  []skillFileStamp // the files of the last scan, in scan order
	scanned bool
	skills  []Skill // sorted by name
	files   map[string]cachedSkillFile
	parsed  map[[32]byte]*parsedSkill
	// problems are the front-matter errors of file versions read since the last
	// takeProblems, by path: Load logs each once, not on every wake.
	problems map[string]error
}

// takeProblems returns the front-matter errors found since the last call.
func (c *skillsCache) takeProblems() map[string]error {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.problems
	c.problems = nil
	return p
}

// skillFileStamp identifies one version of a file of the scan: when every stamp is the
// same as last time, nothing is read again.
type skillFileStamp struct {
	path  string
	skill string // the skill it belongs to
	ref   string // "" for the skill file, else the reference's name
	size  int64
	mtime int64
}

type cachedSkillFile struct {
	size, mtime int64
	hash        [32]byte
	content     string
}

// parsedSkill is what a skill file's content says, before its name is known.
type parsedSkill struct {
	fm    frontMatter
	fmErr error
	body  string
}

func (c *skillsCache) scan() ([]Skill, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := &skillWalker{}
	for _, d := range c.dirs {
		if err := w.dir(d); err != nil {
			return nil, fmt.Errorf("runtime: skills: %w", err)
		}
	}
	if c.scanned && slices.Equal(w.stamps, c.stamps) {
		return c.skills, nil
	}
	files := make(map[string]cachedSkillFile, len(w.stamps))
	byName := map[string]*Skill{}
	var order []string
	for _, st := range w.stamps {
		f, ok := c.files[st.path]
		if !ok || f.size != st.size || f.mtime != st.mtime {
			data, err := os.ReadFile(st.path)
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed since it was listed
			}
			if err != nil {
				return nil, fmt.Errorf("runtime: skills: %w", err)
			}
			f = cachedSkillFile{size: st.size, mtime: st.mtime, hash: sha256.Sum256(data), content: string(data)}
		}
		files[st.path] = f
		if st.ref == "" {
			s := c.skill(st.skill, st.path, f)
			if _, dup := byName[st.skill]; !dup {
				order = append(order, st.skill)
			}
			byName[st.skill] = &s // a later directory wins
			continue
		}
		if s := byName[st.skill]; s != nil && s.Path == w.owner[st.path] {
			s.References = append(s.References, SkillReference{Name: st.ref, Path: st.path, Content: f.content})
		}
	}
	skills := make([]Skill, 0, len(order))
	for _, name := range order {
		skills = append(skills, *byName[name])
	}
	sort.Slice(skills, func(i, j int) bool { return skills[i].Name < skills[j].Name })
	// Keep only what the current files need.
	inUse := map[[32]byte]bool{}
	for _, f := range files {
		inUse[f.hash] = true
	}
	for h := range c.parsed {
		if !inUse[h] {
			delete(c.parsed, h)
		}
	}
	c.files, c.stamps, c.skills, c.scanned = files, w.stamps, skills, true
	return skills, nil
}

// skill builds the skill of one file, parsing its front matter once per content.
func (c *skillsCache) skill(name, path string, f cachedSkillFile) Skill {
	p := c.parsed[f.hash]
	if p == nil {
		fm, body, err := readFrontMatter(f.content)
		p = &parsedSkill{fm: fm, fmErr: err, body: strings.TrimLeft(body, "\r\n")}
		c.parsed[f.hash] = p
		if err != nil {
			if c.problems == nil {
				c.problems = map[string]error{}
			}
			c.problems[path] = err
		} else {
			delete(c.problems, path) // fixed before it was reported
		}
	}
	fm := p.fm
	s := Skill{Name: name, Path: path, Content: p.body, UserInvocable: p.fmErr == nil, FrontMatterErr: p.fmErr}
	if fm.description != nil {
		s.Description = strings.TrimSpace(*fm.description)
	}
	if s.Description == "" {
		s.Description = humanizeSkillName(name)
	}
	if fm.whenToUse != nil {
		s.WhenToUse = strings.TrimSpace(*fm.whenToUse)
	}
	if s.WhenToUse == "" {
		s.WhenToUse = "User asks about " + strings.ToLower(humanizeSkillName(name))
	}
	if fm.keywords != nil {
		s.Keywords = slices.Clone(*fm.keywords)
	} else {
		s.Keywords = []string{name}
	}
	if fm.arguments != nil {
		s.Arguments = slices.Clone(*fm.arguments)
	}
	if fm.argumentHint != nil {
		s.ArgumentHint = strings.TrimSpace(*fm.argumentHint)
	}
	if fm.userInvocable != nil {
		s.UserInvocable = *fm.userInvocable
	}
	return s
}

// humanizeSkillName is the reference's humanize: "pr-review" → "Pr Review".
func humanizeSkillName(name string) string {
	words := strings.FieldsFunc(name, func(r rune) bool { return r == '-' || r == '_' || unicode.IsSpace(r) })
	for i, w := range words {
		r, size := utf8.DecodeRuneInString(w)
		words[i] = string(unicode.ToUpper(r)) + w[size:]
	}
	return strings.Join(words, " ")
}

// skillWalker lists the skill files and reference files of the directories.
type skillWalker struct {
	stamps []skillFileStamp
	// owner maps a reference file to the skill file whose reference it is, so that a
	// skill overridden by a later directory does not collect the earlier one's files.
	owner map[string]string
}

const skillFileName = "SKILL.md"

func skipSkillDir(name string) bool { return name == "node_modules" || name == ".git" }

// entryKind stats a directory entry: a regular file or a directory (symbolic links to
// files count as files; to directories, as nothing).
func entryKind(dir string, e os.DirEntry) (isFile, isDir bool, info fs.FileInfo, err error) {
	full := filepath.Join(dir, e.Name())
	if e.Type()&fs.ModeSymlink != 0 {
		info, err = os.Stat(full)
		if err != nil || !info.Mode().IsRegular() {
			return false, false, nil, nil // dangling, or not a file
		}
		return true, false, info, nil
	}
	if e.IsDir() {
		return false, true, nil, nil
	}
	if !e.Type().IsRegular() {
		return false, false, nil, nil
	}
	info, err = e.Info()
	if errors.Is(err, fs.ErrNotExist) {
		return false, false, nil, nil
	}
	return err == nil, false, info, err
}

func (w *skillWalker) add(path, skill, ref string, info fs.FileInfo) {
	w.stamps = append(w.stamps, skillFileStamp{path: path, skill: skill, ref: ref, size: info.Size(),
		mtime: info.ModTime().UnixNano()})
}

func readDir(dir string) ([]os.DirEntry, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // a missing directory has no skills; one removed while scanning, no more
	}
	return entries, err
}

// skillFileIn returns the info of dir's SKILL.md, if it has one.
func skillFileIn(dir string, entries []os.DirEntry) (fs.FileInfo, error) {
	for _, e := range entries {
		if e.Name() != skillFileName {
			continue
		}
		isFile, _, info, err := entryKind(dir, e)
		if err != nil || !isFile {
			return nil, err
		}
		return info, nil
	}
	return nil, nil
}

// dir scans a directory that is not inside a skill: a directory with a SKILL.md is a
// skill; otherwise each .md file is a skill, a directory named after one of them holds
// its references, and other directories are scanned the same way.
func (w *skillWalker) dir(dir string) error {
	entries, err := readDir(dir)
	if err != nil || entries == nil {
		return err
	}
	if info, err := skillFileIn(dir, entries); err != nil {
		return err
	} else if info != nil {
		path := filepath.Join(dir, skillFileName)
		w.add(path, filepath.Base(dir), "", info)
		return w.refs(path, filepath.Base(dir), dir, "")
	}
	flat := map[string]string{} // skill name → its file
	var dirs []string
	for _, e := range entries {
		isFile, isDir, info, err := entryKind(dir, e)
		if err != nil {
			return err
		}
		switch {
		case isDir && !skipSkillDir(e.Name()):
			dirs = append(dirs, e.Name())
		case isFile && strings.HasSuffix(e.Name(), ".md"):
			name := strings.TrimSuffix(e.Name(), ".md")
			path := filepath.Join(dir, e.Name())
			flat[name] = path
			w.add(path, name, "", info)
		}
	}
	for _, d := range dirs {
		sub := filepath.Join(dir, d)
		skillFile, isRefDir := flat[d]
		if isRefDir {
			subEntries, err := readDir(sub)
			if err != nil {
				return err
			}
			if info, err := skillFileIn(sub, subEntries); err != nil {
				return err
			} else if info == nil {
				if err := w.refs(skillFile, d, sub, ""); err != nil {
					return err
				}
				continue
			}
		}
		if err := w.dir(sub); err != nil {
			return err
		}
	}
	return nil
}

// refs lists the .md files under dir as references of skill (whose file is skillFile),
// named by their path relative to the skill's directory. A subdirectory with a SKILL.md
// is a skill of its own.
func (w *skillWalker) refs(skillFile, skill, dir, rel string) error {
	entries, err := readDir(dir)
	if err != nil {
		return err
	}
	var dirs []string
	for _, e := range entries {
		isFile, isDir, info, err := entryKind(dir, e)
		if err != nil {
			return err
		}
		path := filepath.Join(dir, e.Name())
		switch {
		case isDir && !skipSkillDir(e.Name()):
			dirs = append(dirs, e.Name())
		case isFile && strings.HasSuffix(e.Name(), ".md") && path != skillFile:
			if w.owner == nil {
				w.owner = map[string]string{}
			}
			w.owner[path] = skillFile
			w.add(path, skill, filepath.ToSlash(filepath.Join(rel, e.Name())), info)
		}
	}
	for _, d := range dirs {
		sub := filepath.Join(dir, d)
		subEntries, err := readDir(sub)
		if err != nil {
			return err
		}
		if info, err := skillFileIn(sub, subEntries); err != nil {
			return err
		} else if info != nil {
			if err := w.dir(sub); err != nil {
				return err
			}
			continue
		}
		if err := w.refs(skillFile, skill, sub, filepath.Join(rel, d)); err != nil {
			return err
		}
	}
	return nil
}
