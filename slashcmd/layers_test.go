package slashcmd_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/validation"
	"github.com/entityd/entityd/slashcmd"
)

// The tests of this file exercise the pure layer rules of slashcmd.Set, without a
// database. A book plays the part of the slash_commands table: it keeps each name's
// static definition, layers and materialized row between transactions, and every step
// starts a new Set from it, the way Service.ApplyTx loads the table.

func sp(s string) *string { return &s }

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// at is the clock of step i of a test.
func at(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }

// iso is the updated_at that step i stamps.
func iso(i int) string { return at(i).UTC().Format("2006-01-02T15:04:05.000Z") }

func def(name string, desc *string, args ...slashcmd.Argument) slashcmd.Definition {
	return slashcmd.Definition{Name: name, Description: desc, Arguments: args}
}

func reg(name, owner string, desc *string) slashcmd.Registration {
	return slashcmd.Registration{Definition: def(name, desc), Owner: owner}
}

func layer(name, owner string, desc *string, updated string) slashcmd.Layer {
	return slashcmd.Layer{Name: name, Owner: owner, Description: desc, UpdatedAt: updated}
}

func staticRow(name string, desc *string, updated string) *slashcmd.Row {
	return &slashcmd.Row{Key: name, Name: name, Description: desc, Source: slashcmd.SourceStatic, UpdatedAt: updated}
}

// dynRow is the effective row of a layer stack: the top layer's fields and the stack.
func dynRow(layers ...slashcmd.Layer) *slashcmd.Row {
	top := layers[len(layers)-1]
	owner := top.Owner
	return &slashcmd.Row{Key: top.Name, Name: top.Name, Description: top.Description, Arguments: top.Arguments,
		Source: slashcmd.SourceDynamic, Owner: &owner, Version: top.Version, UpdatedAt: top.UpdatedAt,
		DynamicLayers: layers}
}

// change is a slashcmd.Change without its Entry, for exact comparisons.
type change struct {
	Name string
	Op   string
	Row  *slashcmd.Row
}

func simplify(cs []slashcmd.Change) []change {
	out := []change{}
	for _, c := range cs {
		out = append(out, change{Name: c.Name, Op: c.Op, Row: c.Row})
	}
	return out
}

func ins(r *slashcmd.Row) change { return change{Name: r.Name, Op: "insert", Row: r} }
func upd(r *slashcmd.Row) change { return change{Name: r.Name, Op: "update", Row: r} }
func del(name string) change     { return change{Name: name, Op: "delete"} }

// stored is a change of stored state (a static definition under dynamic layers) that
// leaves the effective row as it is.
func stored(name string) change { return change{Name: name} }

// book is what the store keeps between transactions.
type book struct {
	entries map[string]*slashcmd.Entry
	limits  slashcmd.Limits
}

func newBook() *book {
	return &book{entries: map[string]*slashcmd.Entry{}, limits: slashcmd.DefaultLimits}
}

func cloneRow(r *slashcmd.Row) *slashcmd.Row {
	if r == nil {
		return nil
	}
	c := *r
	c.DynamicLayers = append([]slashcmd.Layer(nil), r.DynamicLayers...)
	return &c
}

func cloneEntry(e *slashcmd.Entry) *slashcmd.Entry {
	c := &slashcmd.Entry{Name: e.Name, Layers: append([]slashcmd.Layer(nil), e.Layers...), Row: cloneRow(e.Row)}
	if e.Static != nil {
		d := *e.Static
		c.Static = &d
	}
	return c
}

// set starts a transaction on a copy of the book, as loaded from the table.
func (b *book) set(now time.Time) *slashcmd.Set {
	names := make([]string, 0, len(b.entries))
	for n := range b.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	entries := make([]*slashcmd.Entry, len(names))
	for i, n := range names {
		entries[i] = cloneEntry(b.entries[n])
	}
	return slashcmd.NewSet(entries, b.limits, now)
}

// commit records changes the way Service.ApplyTx persists them.
func (b *book) commit(t *testing.T, changes []slashcmd.Change) {
	t.Helper()
	for _, c := range changes {
		e := cloneEntry(c.Entry)
		prev := b.entries[c.Name]
		switch c.Op {
		case "insert", "update":
			require.NotNil(t, c.Row, "%s %s carries the row", c.Op, c.Name)
			e.Row = cloneRow(c.Row)
		case "delete":
			require.Nil(t, c.Row, "a delete carries no row")
			e.Row = nil
		case "":
			require.Nil(t, c.Row)
			require.NotNil(t, prev, "a change of stored state only is about a known row")
			e.Row = cloneRow(prev.Row)
		default:
			t.Fatalf("unknown op %q", c.Op)
		}
		if e.Static == nil && len(e.Layers) == 0 {
			require.Nil(t, e.Row, "%s: a name with neither static nor layers has no row", c.Name)
			delete(b.entries, c.Name)
			continue
		}
		require.NotNil(t, e.Row, "%s: a name with a static or layers has a row", c.Name)
		b.entries[c.Name] = e
	}
}

// rows are the materialized rows, sorted by name.
func (b *book) rows() []slashcmd.Row {
	out := []slashcmd.Row{}
	for _, e := range b.entries {
		out = append(out, *e.Row)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// step runs fn in a new transaction at step i, records what it changed and returns the
// changes. The Set's List must then be exactly what the book has materialized.
func (b *book) step(t *testing.T, i int, fn func(s *slashcmd.Set) error) []change {
	t.Helper()
	s := b.set(at(i))
	require.NoError(t, fn(s))
	cs := s.Changes()
	b.commit(t, cs)
	list := s.List()
	if len(list) == 0 {
		list = []slashcmd.Row{}
	}
	require.Equal(t, b.rows(), list, "the Set's list is what the changes materialized")
	return simplify(cs)
}

func register(r slashcmd.Registration) func(*slashcmd.Set) error {
	return func(s *slashcmd.Set) error { return s.Register(r) }
}

func unregister(name, owner string) func(*slashcmd.Set) error {
	return func(s *slashcmd.Set) error { s.Unregister(name, owner); return nil }
}

func setStatic(defs ...slashcmd.Definition) func(*slashcmd.Set) error {
	return func(s *slashcmd.Set) error { s.SetStatic(defs); return nil }
}

func replaceOwned(owner string, regs ...slashcmd.Registration) func(*slashcmd.Set) error {
	return func(s *slashcmd.Set) error { return s.ReplaceOwned(owner, regs) }
}

func TestLayerScenarioOfTheReference(t *testing.T) {
	b := newBook()
	review, help := sp("Review the change"), sp("Show help")
	localReview, skillsReview, search := sp("Review with local rules"), sp("Review with a skill"), sp("Search the skills")

	// Spawn: the type's static commands.
	require.Equal(t, []change{ins(staticRow("help", help, iso(0))), ins(staticRow("review", review, iso(0)))},
		b.step(t, 0, setStatic(def("review", review), def("help", help))))

	// register local: one layer, dynamic beats static.
	localLayer := layer("review", "local", localReview, iso(1))
	require.Equal(t, []change{upd(dynRow(localLayer))}, b.step(t, 1, register(reg("review", "local", localReview))))

	// register skills: two layers, skills on top.
	skillsLayer := layer("review", "skills", skillsReview, iso(2))
	require.Equal(t, []change{upd(dynRow(localLayer, skillsLayer))},
		b.step(t, 2, register(reg("review", "skills", skillsReview))))

	// skills also owns search, a name with no static command.
	searchLayer := layer("search", "skills", search, iso(3))
	require.Equal(t, []change{ins(dynRow(searchLayer))}, b.step(t, 3, register(reg("search", "skills", search))))
	require.Equal(t, []slashcmd.Row{*staticRow("help", help, iso(0)), *dynRow(localLayer, skillsLayer), *dynRow(searchLayer)},
		b.rows())

	// replaceOwned(skills, [review]) drops search, the name it owned, and leaves review,
	// already exactly skills' top layer, as it is.
	require.Equal(t, []change{del("search")},
		b.step(t, 4, replaceOwned("skills", reg("review", "", skillsReview))))

	// unregister skills reveals local, with local's own updated_at.
	require.Equal(t, []change{upd(dynRow(localLayer))}, b.step(t, 5, unregister("review", "skills")))

	// unregister local reveals the static command, restamped, with null owner and layers.
	require.Equal(t, []change{upd(staticRow("review", review, iso(6)))}, b.step(t, 6, unregister("review", "local")))

	// Static commands cannot be unregistered.
	require.Empty(t, b.step(t, 7, unregister("review", "")))
	require.Empty(t, b.step(t, 8, unregister("review", "local")))
	require.Equal(t, []slashcmd.Row{*staticRow("help", help, iso(0)), *staticRow("review", review, iso(6))}, b.rows())

	// The last step's row, as an event, carries every field with nulls.
	value, err := json.Marshal(b.rows()[1])
	require.NoError(t, err)
	require.JSONEq(t, `{"key":"review","name":"review","description":"Review the change","arguments":null,
		"source":"static","owner":null,"version":null,"updated_at":"`+iso(6)+`","dynamic_layers":null}`, string(value))
}

func TestLayerPrecedence(t *testing.T) {
	b := newBook()
	b.step(t, 0, setStatic(def("go", sp("static"))))
	a, bb, c := sp("from a"), sp("from b"), sp("from c")

	// Any dynamic layer beats static, the newest registration is on top.
	require.Equal(t, []change{upd(dynRow(layer("go", "a", a, iso(1))))}, b.step(t, 1, register(reg("go", "a", a))))
	require.Equal(t, []change{upd(dynRow(layer("go", "a", a, iso(1)), layer("go", "b", bb, iso(2))))},
		b.step(t, 2, register(reg("go", "b", bb))))
	require.Equal(t, []change{upd(dynRow(layer("go", "a", a, iso(1)), layer("go", "b", bb, iso(2)), layer("go", "c", c, iso(3))))},
		b.step(t, 3, register(reg("go", "c", c))))

	// Re-registering a lower owner, even unchanged, moves it to the top with a new stamp.
	require.Equal(t, []change{upd(dynRow(layer("go", "b", bb, iso(2)), layer("go", "c", c, iso(3)), layer("go", "a", a, iso(4))))},
		b.step(t, 4, register(reg("go", "a", a))))
	// Re-registering the top owner with a new description replaces its layer in place.
	a2 := sp("from a, again")
	require.Equal(t, []change{upd(dynRow(layer("go", "b", bb, iso(2)), layer("go", "c", c, iso(3)), layer("go", "a", a2, iso(5))))},
		b.step(t, 5, register(reg("go", "a", a2))))

	// Removing a layer below the top rewrites the stack; the top stays.
	require.Equal(t, []change{upd(dynRow(layer("go", "b", bb, iso(2)), layer("go", "a", a2, iso(5))))},
		b.step(t, 6, unregister("go", "c")))
	// An owner without a layer, and an unknown name, change nothing.
	require.Empty(t, b.step(t, 7, unregister("go", "zed")))
	require.Empty(t, b.step(t, 8, unregister("nothing", "")))
	require.Empty(t, b.step(t, 9, unregister("nothing", "a")))

	// No owner defaults to "handler".
	h := sp("handler's")
	require.Equal(t, []change{upd(dynRow(layer("go", "b", bb, iso(2)), layer("go", "a", a2, iso(5)), layer("go", slashcmd.DefaultOwner, h, iso(10))))},
		b.step(t, 10, register(reg("go", "", h))))

	// Unregister without owner removes only the top owner's layer, one at a time.
	require.Equal(t, []change{upd(dynRow(layer("go", "b", bb, iso(2)), layer("go", "a", a2, iso(5))))},
		b.step(t, 11, unregister("go", "")))
	require.Equal(t, []change{upd(dynRow(layer("go", "b", bb, iso(2))))}, b.step(t, 12, unregister("go", "")))
	require.Equal(t, []change{upd(staticRow("go", sp("static"), iso(13)))}, b.step(t, 13, unregister("go", "")))
	// ... and never a static row.
	require.Empty(t, b.step(t, 14, unregister("go", "")))
	require.Equal(t, []slashcmd.Row{*staticRow("go", sp("static"), iso(13))}, b.rows())

	// A dynamic command without a static one disappears with its last layer.
	require.Equal(t, []change{ins(dynRow(layer("tmp", "a", nil, iso(15))))}, b.step(t, 15, register(reg("tmp", "a", nil))))
	require.Equal(t, []change{del("tmp")}, b.step(t, 16, unregister("tmp", "")))
	require.Empty(t, b.step(t, 17, unregister("tmp", "")))
}

func TestLayerIdenticalRegistrationChangesNothing(t *testing.T) {
	b := newBook()
	args := []slashcmd.Argument{{Name: "target", Type: slashcmd.ArgString, Required: new(bool)}}
	r := slashcmd.Registration{Definition: def("ship", sp("Ship it"), args...), Owner: "ci", Version: sp("v1")}
	top := slashcmd.Layer{Name: "ship", Owner: "ci", Description: sp("Ship it"), Arguments: args, Version: sp("v1"), UpdatedAt: iso(1)}
	require.Equal(t, []change{ins(dynRow(top))}, b.step(t, 1, register(r)))

	// The same definition again, from the top owner: no change at all, the old stamp stays.
	require.Empty(t, b.step(t, 2, register(r)))
	require.Equal(t, []slashcmd.Row{*dynRow(top)}, b.rows())
	require.Empty(t, b.step(t, 3, replaceOwned("ci", r)))

	// A different version, argument or description is a change.
	v2 := r
	v2.Version = sp("v2")
	v2top := top
	v2top.Version, v2top.UpdatedAt = sp("v2"), iso(4)
	require.Equal(t, []change{upd(dynRow(v2top))}, b.step(t, 4, register(v2)))
	noArgs := v2
	noArgs.Arguments = nil
	noArgsTop := v2top
	noArgsTop.Arguments, noArgsTop.UpdatedAt = nil, iso(5)
	require.Equal(t, []change{upd(dynRow(noArgsTop))}, b.step(t, 5, register(noArgs)))
	require.Empty(t, b.step(t, 6, register(noArgs)))

	// The same definition from another owner is a new layer on top.
	other := noArgs
	other.Owner = "cd"
	otherTop := noArgsTop
	otherTop.Owner, otherTop.UpdatedAt = "cd", iso(7)
	require.Equal(t, []change{upd(dynRow(noArgsTop, otherTop))}, b.step(t, 7, register(other)))
	// Now ci is below: re-registering it unchanged moves it to the top.
	movedTop := noArgsTop
	movedTop.UpdatedAt = iso(8)
	require.Equal(t, []change{upd(dynRow(otherTop, movedTop))}, b.step(t, 8, register(noArgs)))
	require.Empty(t, b.step(t, 9, register(noArgs)))
}

func TestLayerReplaceOwned(t *testing.T) {
	b := newBook()
	b.step(t, 0, setStatic(def("alpha", sp("static alpha"))))
	require.Equal(t, []change{
		upd(dynRow(layer("alpha", "sk", sp("a1"), iso(1)))),
		ins(dynRow(layer("beta", "sk", sp("b1"), iso(1)))),
		ins(dynRow(layer("gamma", "sk", nil, iso(1)))),
	}, b.step(t, 1, replaceOwned("sk", reg("alpha", "", sp("a1")), reg("gamma", "ignored", nil), reg("beta", "", sp("b1")))))
	// Another owner on top of beta.
	b.step(t, 2, register(reg("beta", "me", sp("mine"))))
	before := b.rows()

	// One invalid registration: InvalidError with the indexed detail, nothing changed.
	s := b.set(at(3))
	err := s.ReplaceOwned("sk", []slashcmd.Registration{reg("alpha", "", sp("a2")), reg("Bad-Name", "", nil), reg("delta", "", nil)})
	var invalid *slashcmd.InvalidError
	require.ErrorAs(t, err, &invalid)
	require.Equal(t, validation.Details{{Path: "/1/name", Message: "must be a lowercase kebab-case command name"}}, invalid.Details)
	require.Empty(t, s.Changes(), "an invalid set changes nothing, not even the drops")
	require.Equal(t, before, s.List())

	// Duplicates in the set are invalid too.
	s = b.set(at(3))
	err = s.ReplaceOwned("sk", []slashcmd.Registration{reg("alpha", "", nil), reg("alpha", "", sp("x"))})
	require.ErrorAs(t, err, &invalid)
	require.Equal(t, validation.Details{{Path: "/1/name", Message: "must be unique"}}, invalid.Details)
	require.Empty(t, s.Changes())

	// A valid replacement drops, changes and adds in one go; beta keeps "me" on top.
	require.Equal(t, []change{
		upd(dynRow(layer("alpha", "sk", sp("a2"), iso(4)))),
		upd(dynRow(layer("beta", "me", sp("mine"), iso(2)))),
		ins(dynRow(layer("delta", "sk", nil, iso(4)))),
		del("gamma"),
	}, b.step(t, 4, replaceOwned("sk", reg("alpha", "", sp("a2")), reg("delta", "", nil))))

	// Replacing with the same set again: nothing.
	require.Empty(t, b.step(t, 5, replaceOwned("sk", reg("alpha", "", sp("a2")), reg("delta", "", nil))))

	// Replacing with nothing drops every layer of the owner: alpha shows its static again.
	require.Equal(t, []change{upd(staticRow("alpha", sp("static alpha"), iso(6))), del("delta")},
		b.step(t, 6, replaceOwned("sk")))
	require.Equal(t, []slashcmd.Row{*staticRow("alpha", sp("static alpha"), iso(6)), *dynRow(layer("beta", "me", sp("mine"), iso(2)))},
		b.rows())

	// No owner is "handler".
	require.Equal(t, []change{ins(dynRow(layer("h", slashcmd.DefaultOwner, nil, iso(7))))},
		b.step(t, 7, replaceOwned("", reg("h", "x", nil))))
	require.Equal(t, []change{del("h")}, b.step(t, 8, unregister("h", slashcmd.DefaultOwner)))
}

func TestLayerSetStatic(t *testing.T) {
	b := newBook()
	require.Equal(t, []change{ins(staticRow("a", sp("A"), iso(0))), ins(staticRow("b", nil, iso(0)))},
		b.step(t, 0, setStatic(def("a", sp("A")), def("b", nil))))

	// The same definitions: nothing, and the rows keep their stamps.
	require.Empty(t, b.step(t, 1, setStatic(def("b", nil), def("a", sp("A")))))
	require.Equal(t, []slashcmd.Row{*staticRow("a", sp("A"), iso(0)), *staticRow("b", nil, iso(0))}, b.rows())

	// Without layers: change a, remove b, add c.
	args := []slashcmd.Argument{{Name: "n", Type: slashcmd.ArgNumber}}
	cRow := staticRow("c", sp("C"), iso(2))
	cRow.Arguments = args
	require.Equal(t, []change{upd(staticRow("a", sp("A2"), iso(2))), del("b"), ins(cRow)},
		b.step(t, 2, setStatic(def("a", sp("A2")), def("c", sp("C"), args...))))

	// With layers on every name: the rows do not change, the static definitions do.
	la := layer("a", "o", sp("dyn a"), iso(3))
	lc := layer("c", "o", sp("dyn c"), iso(3))
	b.step(t, 3, func(s *slashcmd.Set) error {
		require.NoError(t, s.Register(reg("a", "o", sp("dyn a"))))
		return s.Register(reg("c", "o", sp("dyn c")))
	})
	ld := layer("d", "o", sp("dyn d"), iso(4))
	require.Equal(t, []change{ins(dynRow(ld))}, b.step(t, 4, register(reg("d", "o", sp("dyn d")))))
	require.Equal(t, []change{stored("a"), stored("c"), stored("d")},
		b.step(t, 5, setStatic(def("a", sp("A3")), def("d", sp("D")))), "a changed, c removed, d added, all under layers")
	require.Equal(t, []slashcmd.Row{*dynRow(la), *dynRow(lc), *dynRow(ld)}, b.rows())
	require.Equal(t, sp("A3"), b.entries["a"].Static.Description)
	require.Nil(t, b.entries["c"].Static)
	require.Equal(t, sp("D"), b.entries["d"].Static.Description)

	// Removing the layers then shows the new statics, or removes the row.
	require.Equal(t, []change{upd(staticRow("a", sp("A3"), iso(6))), del("c"), upd(staticRow("d", sp("D"), iso(6)))},
		b.step(t, 6, replaceOwned("o")))
	require.Equal(t, []change{del("a"), del("d")}, b.step(t, 7, setStatic()))
	require.Empty(t, b.rows())

	// An empty arguments list is not the same as none, also under a layer.
	noArgs := []slashcmd.Argument{}
	empty := staticRow("x", nil, iso(8))
	empty.Arguments = noArgs
	require.Equal(t, []change{ins(empty)}, b.step(t, 8, setStatic(def("x", nil, noArgs...))))
	b.step(t, 9, register(reg("x", "o", nil)))
	require.Equal(t, []change{stored("x")}, b.step(t, 10, setStatic(def("x", nil))))
	require.Equal(t, []change{upd(staticRow("x", nil, iso(11)))}, b.step(t, 11, unregister("x", "")))
}

func TestLayerChangeUndoneInOneSetIsNoChange(t *testing.T) {
	b := newBook()
	b.step(t, 0, setStatic(def("s", sp("S"))))
	b.step(t, 1, register(reg("d", "low", sp("low"))))
	rows := b.rows()

	for name, fn := range map[string]func(s *slashcmd.Set) error{
		"register a new name, unregister it": func(s *slashcmd.Set) error {
			require.NoError(t, s.Register(reg("new", "x", nil)))
			s.Unregister("new", "x")
			return nil
		},
		"a layer over a static, removed": func(s *slashcmd.Set) error {
			require.NoError(t, s.Register(reg("s", "x", sp("over"))))
			s.Unregister("s", "")
			return nil
		},
		"a layer over a layer, removed": func(s *slashcmd.Set) error {
			require.NoError(t, s.Register(reg("d", "high", sp("high"))))
			s.Unregister("d", "high")
			return nil
		},
		"a static changed and changed back": func(s *slashcmd.Set) error {
			s.SetStatic([]slashcmd.Definition{def("s", sp("other")), def("t", nil)})
			s.SetStatic([]slashcmd.Definition{def("s", sp("S"))})
			return nil
		},
		"a static removed and restored": func(s *slashcmd.Set) error {
			s.SetStatic(nil)
			s.SetStatic([]slashcmd.Definition{def("s", sp("S"))})
			return nil
		},
		"an invalid registration": func(s *slashcmd.Set) error {
			var invalid *slashcmd.InvalidError
			require.ErrorAs(t, s.Register(reg("s", "x", sp(strings.Repeat("x", 1001)))), &invalid)
			return nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := b.set(at(2))
			require.NoError(t, fn(s))
			require.Empty(t, s.Changes())
			require.Equal(t, rows, s.List())
		})
	}
}

func TestLayerInvalidRegistrations(t *testing.T) {
	tooManyArgs := make([]slashcmd.Argument, 33)
	for i := range tooManyArgs {
		tooManyArgs[i] = slashcmd.Argument{Name: fmt.Sprintf("a%d", i), Type: slashcmd.ArgString}
	}
	for _, tc := range []struct {
		name string
		reg  slashcmd.Registration
		want validation.Details
	}{
		{"leading slash", reg("/deploy", "", nil),
			validation.Details{{Path: "/name", Message: "must be a lowercase kebab-case command name"}}},
		{"capitals", reg("QuickStart", "", nil),
			validation.Details{{Path: "/name", Message: "must be a lowercase kebab-case command name"}}},
		{"empty name", reg("", "", nil),
			validation.Details{{Path: "/name", Message: "must be a lowercase kebab-case command name"}}},
		{"name too long", reg(strings.Repeat("n", 65), "", nil),
			validation.Details{{Path: "/name", Message: "must be at most 64 characters"}}},
		{"description too long", reg("ok", "", sp(strings.Repeat("é", 1001))),
			validation.Details{{Path: "/description", Message: "must be at most 1000 characters"}}},
		{"too many arguments", slashcmd.Registration{Definition: def("ok", nil, tooManyArgs...)},
			validation.Details{{Path: "/arguments", Message: "must contain at most 32 arguments"}}},
		{"bad argument", slashcmd.Registration{Definition: def("ok", nil, slashcmd.Argument{Name: "Bad", Type: "date"})},
			validation.Details{
				{Path: "/arguments/0/name", Message: "must be a valid argument name"},
				{Path: "/arguments/0/type", Message: "must be string, number, or boolean"},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := slashcmd.NewSet(nil, slashcmd.DefaultLimits, at(0))
			err := s.Register(tc.reg)
			var invalid *slashcmd.InvalidError
			require.ErrorAs(t, err, &invalid)
			require.Equal(t, tc.want, invalid.Details)
			require.Empty(t, s.Changes())
			require.Empty(t, s.List())
		})
	}

	// The limits themselves are fine.
	s := slashcmd.NewSet(nil, slashcmd.DefaultLimits, at(0))
	require.NoError(t, s.Register(slashcmd.Registration{Definition: def(strings.Repeat("n", 64), sp(strings.Repeat("é", 1000)), tooManyArgs[:32]...)}))
	require.Len(t, s.Changes(), 1)
}

func TestLayerTooManyCommands(t *testing.T) {
	b := newBook()
	defs := make([]slashcmd.Definition, 499)
	for i := range defs {
		defs[i] = def(fmt.Sprintf("cmd-%03d", i), nil)
	}
	b.step(t, 0, setStatic(defs...))

	// The 500th command is fine, the 501st is not.
	require.Len(t, b.step(t, 1, register(reg("five-hundred", "o", nil))), 1)
	s := b.set(at(2))
	require.True(t, errors.Is(s.Register(reg("five-hundred-one", "o", nil)), slashcmd.ErrTooManyCommands))
	s = b.set(at(2))
	require.ErrorIs(t, s.ReplaceOwned("o", []slashcmd.Registration{reg("five-hundred", "", nil), reg("five-hundred-one", "", nil)}),
		slashcmd.ErrTooManyCommands)

	// Layers on existing names do not count twice, and swapping one name for another
	// within the same set stays at 500.
	require.Len(t, b.step(t, 3, register(reg("cmd-000", "o", nil))), 1)
	require.Equal(t, []change{del("five-hundred"), ins(dynRow(layer("other", "o", nil, iso(4))))},
		b.step(t, 4, replaceOwned("o", reg("cmd-000", "", nil), reg("other", "", nil))))
	require.Len(t, b.rows(), 500)

	// Without a command limit there is none.
	b.limits = slashcmd.Limits{}
	require.Len(t, b.step(t, 5, register(reg("five-hundred-one", "o", nil))), 1)
}
