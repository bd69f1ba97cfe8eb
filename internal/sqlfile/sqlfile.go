// Package sqlfile loads the named queries a package keeps in .sql files next to its
// Go code (queries/*.sql, embedded). A query starts at a "-- name: X" line and runs to
// the next one; comment lines right after the name document it and are not sent.
// A "-- fragment: X" entry is text shared by queries of the same set, which write
// {{X}} where it goes (a column list that one scan function reads, say); any other
// {{Y}} is a value the owner supplies at init with GetWith.
//
// Owners declare one package-level variable per query (sqlX = queries.Get("X")), so a
// misspelt name stops the package at init rather than on the first request that needs
// it, and every loaded set is registered for the test that prepares all of them
// against the migrated schema.
package sqlfile

import (
	"bufio"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Set is the queries of one owning package.
type Set struct {
	owner     string
	queries   map[string]string
	fragments map[string]string
	files     map[string]string // entry name → the .sql file it came from
	mu        sync.Mutex
	used      map[string]bool   // fragments used by a query, queries fetched by Get
	final     map[string]string // the text handed out for each fetched query
}

// placeholder is {{name}} in a query's text.
var placeholder = regexp.MustCompile(`\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}`)

var (
	registryMu sync.Mutex
	registry   []*Set
)

// MustLoad parses every *.sql file at the root of fsys and registers the set under
// owner. Malformed files (no name, a duplicate name, an empty query) panic: they are
// part of the program.
func MustLoad(owner string, fsys fs.FS) *Set {
	s, err := Load(owner, fsys)
	if err != nil {
		panic(err)
	}
	registryMu.Lock()
	registry = append(registry, s)
	registryMu.Unlock()
	return s
}

// Load parses every *.sql file at the root of fsys (or under a single directory level
// when fsys is an embed.FS of "queries/*.sql").
func Load(owner string, fsys fs.FS) (*Set, error) {
	s := &Set{owner: owner, queries: map[string]string{}, fragments: map[string]string{},
		files: map[string]string{}, used: map[string]bool{}, final: map[string]string{}}
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	nested, err := fs.Glob(fsys, "*/*.sql")
	if err != nil {
		return nil, err
	}
	names = append(names, nested...)
	if len(names) == 0 {
		return nil, fmt.Errorf("sqlfile: %s: no .sql files", owner)
	}
	for _, name := range names {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		if err := s.parse(path.Base(name), string(data)); err != nil {
			return nil, fmt.Errorf("sqlfile: %s/%s: %w", owner, name, err)
		}
	}
	for name, q := range s.queries {
		s.queries[name] = placeholder.ReplaceAllStringFunc(q, func(m string) string {
			key := m[2 : len(m)-2]
			if f, ok := s.fragments[key]; ok {
				s.used[key] = true
				return f
			}
			return m
		})
	}
	return s, nil
}

func (s *Set) parse(file, text string) error {
	var name string
	var fragment bool
	var body []string
	inHeader := false
	flush := func() error {
		if name == "" {
			return nil
		}
		q := strings.TrimSpace(strings.Join(body, "\n"))
		if q == "" {
			return fmt.Errorf("query %s is empty", name)
		}
		if fragment {
			s.fragments[name] = q
		} else {
			s.queries[name] = q
		}
		s.files[name] = file
		return nil
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		l := sc.Text()
		rest, isQuery := strings.CutPrefix(l, "-- name:")
		frag, isFragment := strings.CutPrefix(l, "-- fragment:")
		if isQuery || isFragment {
			if err := flush(); err != nil {
				return err
			}
			if isFragment {
				rest = frag
			}
			name, fragment = strings.TrimSpace(rest), isFragment
			if name == "" || strings.ContainsAny(name, " \t") {
				return fmt.Errorf("line %d: bad query name %q", line, name)
			}
			if _, dup := s.files[name]; dup {
				return fmt.Errorf("line %d: query %s is defined twice", line, name)
			}
			body, inHeader = nil, true
			continue
		}
		if name == "" {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "--") {
				return fmt.Errorf("line %d: SQL before the first \"-- name:\" line", line)
			}
			continue
		}
		if inHeader && strings.HasPrefix(strings.TrimSpace(l), "--") {
			continue
		}
		inHeader = false
		body = append(body, l)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return flush()
}

// Get returns the query called name and panics when there is none, or when it still
// has a {{value}} to fill: it is called from package-level variable declarations, so a
// wrong name fails at init.
func (s *Set) Get(name string) string { return s.GetWith(name, nil) }

// GetWith is Get for a query with {{key}} placeholders, filled from values (a status
// list that Go code defines, say). Every placeholder must be filled and every value
// used.
func (s *Set) GetWith(name string, values map[string]string) string {
	q, ok := s.queries[name]
	if !ok {
		panic(fmt.Sprintf("sqlfile: %s has no query %q", s.owner, name))
	}
	seen := map[string]bool{}
	q = placeholder.ReplaceAllStringFunc(q, func(m string) string {
		key := m[2 : len(m)-2]
		v, ok := values[key]
		if !ok {
			panic(fmt.Sprintf("sqlfile: %s.%s needs a value for {{%s}}", s.owner, name, key))
		}
		seen[key] = true
		return v
	})
	for key := range values {
		if !seen[key] {
			panic(fmt.Sprintf("sqlfile: %s.%s has no {{%s}}", s.owner, name, key))
		}
	}
	s.mu.Lock()
	s.used[name] = true
	s.final[name] = q
	s.mu.Unlock()
	return q
}

// Owner is the package the set belongs to.
func (s *Set) Owner() string { return s.owner }

// Names lists the set's queries and fragments in order.
func (s *Set) Names() []string {
	out := make([]string, 0, len(s.files))
	for n := range s.files {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Fetched returns the text of every query handed out so far (after fragments and
// values), by name: what the program will send, for a test to prepare.
func (s *Set) Fetched() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.final))
	for n, q := range s.final {
		out[n] = q
	}
	return out
}

// File names the .sql file that defines an entry.
func (s *Set) File(name string) string { return s.files[name] }

// Unused lists queries nobody fetched and fragments no query uses: dead text that
// would otherwise rot.
func (s *Set) Unused() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, n := range s.Names() {
		if !s.used[n] {
			out = append(out, n)
		}
	}
	return out
}

// Registered returns every set loaded with MustLoad in this process.
func Registered() []*Set {
	registryMu.Lock()
	defer registryMu.Unlock()
	return append([]*Set(nil), registry...)
}
