package slashcmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"sort"
	"time"

	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/internal/validation"
)

// DefaultOwner owns registrations that name no owner (as in the reference runtime).
const DefaultOwner = "handler"

// Registration is a dynamic registration of a command by an owner.
type Registration struct {
	Definition
	Owner   string  `json:"owner,omitempty"`
	Version *string `json:"version,omitempty"`
}

// Entry is everything known about one command name of one entity: the static definition
// from its entity type, the stack of dynamic layers (bottom first, the last on top), and
// the effective row currently materialized (nil when none).
type Entry struct {
	Name   string
	Static *Definition
	Layers []Layer
	Row    *Row
	// Stored is each owner's layer as loaded (position and encoding), so that a change
	// writes only the layers that differ (slashdb fills it when it loads layers).
	Stored map[string]StoredLayer
}

// InvalidError carries the {path,message} details of a refused definition.
type InvalidError struct{ Details validation.Details }

func (e *InvalidError) Error() string { return "invalid slash command definition" }

// ErrTooManyCommands refuses a registration that would exceed Limits.MaxCommands.
var ErrTooManyCommands = errors.New("too many slash commands for one entity")

// Set is the command set of one entity being changed. Operations apply the layer rules
// in memory; Changes then reports the effective rows that differ from what was
// materialized before, which is what gets written. The same rules serve the HTTP API, the
// Go API and the runtime, and a change that leaves a row as it was writes nothing.
type Set struct {
	entries map[string]*Entry
	orig    map[string]*Row
	stored  map[string]string // storedState of each entry as loaded
	limits  Limits
	now     time.Time
}

// NewSet starts a change of the entries as loaded (their Row is what is materialized).
func NewSet(entries []*Entry, limits Limits, now time.Time) *Set {
	s := &Set{entries: map[string]*Entry{}, orig: map[string]*Row{}, stored: map[string]string{}, limits: limits, now: now}
	for _, e := range entries {
		s.entries[e.Name] = e
		s.orig[e.Name] = e.Row
		s.stored[e.Name] = storedState(e)
	}
	return s
}

// storedState renders what the table keeps of an entry besides its effective row: the
// static definition and the layers (operations change Layers in place, so NewSet keeps
// this copy to compare with).
func storedState(e *Entry) string {
	layers := e.Layers
	if len(layers) == 0 {
		layers = nil
	}
	var static json.RawMessage
	if e.Static != nil {
		static, _ = StaticJSON(*e.Static) // keeps "arguments":[] apart from none
	}
	b, _ := json.Marshal(struct {
		Static json.RawMessage
		Layers []Layer
	}{static, layers})
	return string(b)
}

// storedChanged reports whether the static definition or the layers of e differ from
// what was loaded (an entry that was not loaded had neither).
func (s *Set) storedChanged(e *Entry) bool {
	before, ok := s.stored[e.Name]
	if !ok {
		before = storedState(&Entry{Name: e.Name})
	}
	return storedState(e) != before
}

func (s *Set) entry(name string) *Entry {
	e := s.entries[name]
	if e == nil {
		e = &Entry{Name: name}
		s.entries[name] = e
	}
	return e
}

// Get returns the effective row for name as it stands in this change.
func (s *Set) Get(name string) (Row, bool) {
	e := s.entries[name]
	if e == nil {
		return Row{}, false
	}
	r := e.Effective(s.now, s.orig[name])
	if r == nil {
		return Row{}, false
	}
	return *r, true
}

// List returns every effective row, sorted by name.
func (s *Set) List() []Row {
	out := make([]Row, 0, len(s.entries))
	for _, name := range s.names() {
		if r, ok := s.Get(name); ok {
			out = append(out, r)
		}
	}
	return out
}

func (s *Set) names() []string {
	names := make([]string, 0, len(s.entries))
	for n := range s.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ValidateRegistrations checks registrations with the definition rules; detail paths
// are base + "/<index>/<field>".
func ValidateRegistrations(regs []Registration, base string, limits Limits) validation.Details {
	defs := make([]Definition, len(regs))
	for i, r := range regs {
		defs[i] = r.Definition
	}
	noCount := limits
	noCount.MaxCommands = 0
	return Validate(defs, base, noCount)
}

// Register puts reg on top of its name's layers, replacing the owner's earlier layer.
// Registering exactly what the owner already has on top changes nothing.
func (s *Set) Register(reg Registration) error {
	if reg.Owner == "" {
		reg.Owner = DefaultOwner
	}
	d := ValidateRegistrations([]Registration{reg}, "", s.limits)
	d = append(trimIndex(d), checkOwnerAndVersion(reg.Owner, reg.Version, s.limits)...)
	if len(d) > 0 {
		return &InvalidError{Details: d}
	}
	before := s.owners()
	s.register(reg)
	if err := s.checkOwners(before); err != nil {
		return err
	}
	return s.checkCount()
}

func (s *Set) register(reg Registration) {
	if reg.Owner == "" {
		reg.Owner = DefaultOwner
	}
	e := s.entry(reg.Name)
	layer := Layer{Name: reg.Name, Description: reg.Description, Arguments: reg.Arguments, Owner: reg.Owner,
		Version: reg.Version, UpdatedAt: rawjson.ISOTime(s.now)}
	if n := len(e.Layers); n > 0 && sameLayer(e.Layers[n-1], layer) {
		return
	}
	layer.Position = e.topPosition() + 1
	e.removeOwner(reg.Owner)
	e.Layers = append(e.Layers, layer)
}

// topPosition is the highest stored position among the entry's layers, current or as
// loaded (a removed layer's position is not reused within the change).
func (e *Entry) topPosition() int64 {
	var top int64
	for _, l := range e.Layers {
		top = max(top, l.Position)
	}
	for _, l := range e.Stored {
		top = max(top, l.Position)
	}
	return top
}

// Unregister removes owner's layer for name. Without an owner it removes the layer of the
// current effective row's owner, and only when that row is dynamic: static commands
// cannot be unregistered.
func (s *Set) Unregister(name, owner string) {
	e := s.entries[name]
	if e == nil {
		return
	}
	if owner == "" {
		if len(e.Layers) == 0 {
			return
		}
		owner = e.Layers[len(e.Layers)-1].Owner
	}
	e.removeOwner(owner)
}

// ReplaceOwned makes owner's registrations exactly regs: it validates the whole set first
// (nothing changes when any is invalid), drops owner's layers for names not in regs, and
// registers each of regs.
func (s *Set) ReplaceOwned(owner string, regs []Registration) error {
	if owner == "" {
		owner = DefaultOwner
	}
	d := ValidateRegistrations(regs, "", s.limits)
	d = append(d, checkOwnerAndVersion(owner, nil, s.limits)...)
	for i, r := range regs {
		for _, x := range checkOwnerAndVersion(owner, r.Version, s.limits) {
			if x.Path == "/version" {
				d.Add(validation.Join("", i, "version"), x.Message)
			}
		}
	}
	if len(d) > 0 {
		return &InvalidError{Details: d}
	}
	before := s.owners()
	keep := map[string]bool{}
	for _, r := range regs {
		keep[r.Name] = true
	}
	for _, name := range s.names() {
		if !keep[name] {
			s.entries[name].removeOwner(owner)
		}
	}
	for _, r := range regs {
		r.Owner = owner
		s.register(r)
	}
	if err := s.checkOwners(before); err != nil {
		return err
	}
	return s.checkCount()
}

// SetStatic reconciles the static definitions with defs (an entity type's commands):
// changed definitions replace the old ones, missing ones are removed. Dynamic layers are
// untouched, so a name with layers keeps showing its top layer.
func (s *Set) SetStatic(defs []Definition) {
	want := map[string]Definition{}
	for _, d := range defs {
		want[d.Name] = d
	}
	for _, name := range s.names() {
		if _, ok := want[name]; !ok {
			s.entries[name].Static = nil
		}
	}
	for _, d := range defs {
		d := d
		s.entry(d.Name).Static = &d
	}
}

func (s *Set) checkCount() error {
	if s.limits.MaxCommands <= 0 {
		return nil
	}
	n := 0
	for _, e := range s.entries {
		if e.Static != nil || len(e.Layers) > 0 {
			n++
		}
	}
	if n > s.limits.MaxCommands {
		return ErrTooManyCommands
	}
	return nil
}

// Change is a new effective row to materialize (Row nil: the row is deleted).
type Change struct {
	Name  string
	Op    string // insert, update or delete
	Row   *Row
	Entry *Entry
}

// Changes returns, sorted by name, every entry whose effective row differs from what
// was materialized (ignoring updated_at), plus entries whose stored state (static
// definition or layers) changed without changing the row (Op "").
func (s *Set) Changes() []Change {
	var out []Change
	for _, name := range s.names() {
		e := s.entries[name]
		before := s.orig[name]
		after := e.Effective(s.now, before)
		switch {
		case before == nil && after == nil:
			if s.storedChanged(e) {
				out = append(out, Change{Name: name, Entry: e})
			}
		case before == nil:
			out = append(out, Change{Name: name, Op: "insert", Row: after, Entry: e})
		case after == nil:
			out = append(out, Change{Name: name, Op: "delete", Entry: e})
		case !sameRow(*before, *after):
			out = append(out, Change{Name: name, Op: "update", Row: after, Entry: e})
		case s.storedChanged(e):
			out = append(out, Change{Name: name, Entry: e}) // no event, but the table changes
		}
	}
	return out
}

// Effective is the row the entry shows: its top layer, else its static definition
// (keeping the materialized updated_at when nothing changed), else none.
func (e *Entry) Effective(now time.Time, before *Row) *Row {
	if n := len(e.Layers); n > 0 {
		top := e.Layers[n-1]
		owner := top.Owner
		layers := PublicLayers(e.Layers)
		return &Row{Key: e.Name, Name: e.Name, Description: top.Description, Arguments: top.Arguments,
			Source: SourceDynamic, Owner: &owner, Version: top.Version, UpdatedAt: top.UpdatedAt, DynamicLayers: layers}
	}
	if e.Static != nil {
		r := StaticRow(*e.Static, now)
		if before != nil && sameRow(*before, r) {
			r.UpdatedAt = before.UpdatedAt
		}
		return &r
	}
	return nil
}

// publicLayers copies layers as rows show them (without their storage position).
// PublicLayers are the layers as clients see them (without their stored positions).
func PublicLayers(ls []Layer) []Layer {
	out := append([]Layer(nil), ls...)
	for i := range out {
		out[i].Position = 0
	}
	return out
}

func (e *Entry) removeOwner(owner string) {
	kept := e.Layers[:0]
	for _, l := range e.Layers {
		if l.Owner != owner {
			kept = append(kept, l)
		}
	}
	e.Layers = kept
}

func sameLayer(a, b Layer) bool {
	a.UpdatedAt, b.UpdatedAt = "", ""
	return jsonEqual(a, b)
}

func sameRow(a, b Row) bool {
	a.UpdatedAt, b.UpdatedAt = "", ""
	return jsonEqual(a, b)
}

func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// trimIndex turns "/0/name" details of a one-element validation into "/name".
func trimIndex(d validation.Details) validation.Details {
	out := make(validation.Details, len(d))
	for i, x := range d {
		p := x.Path
		if len(p) >= 2 && p[:2] == "/0" {
			p = p[2:]
			if p == "" {
				p = "/"
			}
		}
		out[i] = validation.Detail{Path: p, Message: x.Message}
	}
	return out
}

// StoredLayer is a layer as loaded: where it sits in the stack and its encoding.
type StoredLayer struct {
	Position int64
	Encoded  string
}

// StaticJSON renders a static definition for the static_def column. Unlike
// json.Marshal(Definition), whose omitempty drops an empty arguments list, it keeps
// "arguments":[] apart from an absent list, so the definition loads back showing the
// same row it was written with.
func StaticJSON(d Definition) ([]byte, error) {
	return json.Marshal(struct {
		Name        string     `json:"name"`
		Description *string    `json:"description,omitempty"`
		Arguments   []Argument `json:"arguments"`
	}{d.Name, d.Description, d.Arguments})
}
