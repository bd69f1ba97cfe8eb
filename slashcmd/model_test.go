package slashcmd_test

import (
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"
	"testing/quick"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/slashcmd"
)

// A model-based test of the layer rules: random programs of Register, Unregister,
// ReplaceOwned and SetStatic run both on slashcmd.Set (one Set per transaction, its
// state carried to the next like the store carries it through the table) and on a small
// independent model of the rules of spec §3.5. After every transaction the effective
// rows must be the model's, and Changes exactly the names whose row changed (ignoring
// the row's updated_at), plus the static definitions changed under dynamic layers.

var (
	modelNames  = []string{"alpha", "beta", "gamma"}
	modelOwners = []string{"x", "y", ""} // "" is the default owner, "handler"
	modelDescs  = []*string{nil, sp("one"), sp("two")}
)

type opKind int

const (
	opRegister opKind = iota
	opUnregister
	opReplaceOwned
	opSetStatic
)

type modelCmd struct {
	name string
	desc *string
}

// modelOp is one operation of a program.
type modelOp struct {
	kind    opKind
	name    string
	owner   string
	desc    *string
	cmds    []modelCmd // ReplaceOwned's registrations, SetStatic's definitions
	invalid bool       // ReplaceOwned with an invalid registration among cmds
}

func descString(d *string) string {
	if d == nil {
		return "nil"
	}
	return fmt.Sprintf("%q", *d)
}

func (o modelOp) String() string {
	cmds := make([]string, len(o.cmds))
	for i, c := range o.cmds {
		cmds[i] = c.name + "=" + descString(c.desc)
	}
	switch o.kind {
	case opRegister:
		return fmt.Sprintf("Register(%s, owner %q, %s)", o.name, o.owner, descString(o.desc))
	case opUnregister:
		return fmt.Sprintf("Unregister(%s, owner %q)", o.name, o.owner)
	case opReplaceOwned:
		return fmt.Sprintf("ReplaceOwned(%q, [%s], invalid=%v)", o.owner, strings.Join(cmds, " "), o.invalid)
	default:
		return fmt.Sprintf("SetStatic([%s])", strings.Join(cmds, " "))
	}
}

// program is a list of transactions, each a list of operations.
type program [][]modelOp

func (p program) String() string {
	var b strings.Builder
	for i, tx := range p {
		fmt.Fprintf(&b, "tx %d:", i+1)
		for _, o := range tx {
			b.WriteString(" " + o.String() + ";")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.Intn(len(xs))] }

// randomCmds is a random subset of the names (in random order) with random descriptions.
func randomCmds(r *rand.Rand) []modelCmd {
	var out []modelCmd
	for _, i := range r.Perm(len(modelNames)) {
		if r.Intn(2) == 0 {
			out = append(out, modelCmd{name: modelNames[i], desc: pick(r, modelDescs)})
		}
	}
	return out
}

func randomOp(r *rand.Rand) modelOp {
	switch n := r.Intn(10); {
	case n < 4:
		return modelOp{kind: opRegister, name: pick(r, modelNames), owner: pick(r, modelOwners), desc: pick(r, modelDescs)}
	case n < 7:
		return modelOp{kind: opUnregister, name: pick(r, modelNames), owner: pick(r, append([]string{"handler"}, modelOwners...))}
	case n < 9:
		return modelOp{kind: opReplaceOwned, owner: pick(r, modelOwners), cmds: randomCmds(r), invalid: r.Intn(8) == 0}
	default:
		return modelOp{kind: opSetStatic, cmds: randomCmds(r)}
	}
}

// randomProgram has ops operations, mostly one per transaction, sometimes up to three.
func randomProgram(r *rand.Rand, ops int) program {
	var p program
	for ops > 0 {
		n := 1
		if r.Intn(4) == 0 {
			n = 1 + r.Intn(3)
		}
		if n > ops {
			n = ops
		}
		tx := make([]modelOp, n)
		for i := range tx {
			tx[i] = randomOp(r)
		}
		p = append(p, tx)
		ops -= n
	}
	return p
}

// Generate makes program a testing/quick value.
func (program) Generate(r *rand.Rand, size int) reflect.Value {
	return reflect.ValueOf(randomProgram(r, 1+r.Intn(size+1)))
}

// ---------------------------------------------------------------------------
// The model

type mLayer struct {
	owner   string
	desc    *string
	updated string
}

type mEntry struct {
	static *string // description of the static definition
	has    bool    // a static definition exists
	layers []mLayer
	row    *slashcmd.Row // the materialized row
}

type model map[string]*mEntry

func (m model) entry(name string) *mEntry {
	e := m[name]
	if e == nil {
		e = &mEntry{}
		m[name] = e
	}
	return e
}

func sameDesc(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func (e *mEntry) remove(owner string) {
	var kept []mLayer
	for _, l := range e.layers {
		if l.owner != owner {
			kept = append(kept, l)
		}
	}
	e.layers = kept
}

func (m model) register(name, owner string, desc *string, now string) {
	if owner == "" {
		owner = slashcmd.DefaultOwner
	}
	e := m.entry(name)
	if n := len(e.layers); n > 0 && e.layers[n-1].owner == owner && sameDesc(e.layers[n-1].desc, desc) {
		return
	}
	e.remove(owner)
	e.layers = append(e.layers, mLayer{owner: owner, desc: desc, updated: now})
}

func (m model) apply(o modelOp, now string) {
	switch o.kind {
	case opRegister:
		m.register(o.name, o.owner, o.desc, now)
	case opUnregister:
		e := m[o.name]
		if e == nil {
			return
		}
		owner := o.owner
		if owner == "" {
			if len(e.layers) == 0 {
				return // static commands cannot be unregistered
			}
			owner = e.layers[len(e.layers)-1].owner
		}
		e.remove(owner)
	case opReplaceOwned:
		if o.invalid {
			return
		}
		owner := o.owner
		if owner == "" {
			owner = slashcmd.DefaultOwner
		}
		keep := map[string]bool{}
		for _, c := range o.cmds {
			keep[c.name] = true
		}
		for name, e := range m {
			if !keep[name] {
				e.remove(owner)
			}
		}
		for _, c := range o.cmds {
			m.register(c.name, owner, c.desc, now)
		}
	case opSetStatic:
		for _, e := range m {
			e.has, e.static = false, nil
		}
		for _, c := range o.cmds {
			e := m.entry(c.name)
			e.has, e.static = true, c.desc
		}
	}
}

// effective is the row the model expects for e, given the row materialized before.
func (e *mEntry) effective(name, now string) *slashcmd.Row {
	if n := len(e.layers); n > 0 {
		top := e.layers[n-1]
		owner := top.owner
		row := &slashcmd.Row{Key: name, Name: name, Description: top.desc, Source: slashcmd.SourceDynamic,
			Owner: &owner, UpdatedAt: top.updated}
		for _, l := range e.layers {
			row.DynamicLayers = append(row.DynamicLayers,
				slashcmd.Layer{Name: name, Owner: l.owner, Description: l.desc, UpdatedAt: l.updated})
		}
		return row
	}
	if e.has {
		row := &slashcmd.Row{Key: name, Name: name, Description: e.static, Source: slashcmd.SourceStatic, UpdatedAt: now}
		if e.row != nil && rowsEqualButStamp(*e.row, *row) {
			row.UpdatedAt = e.row.UpdatedAt
		}
		return row
	}
	return nil
}

func rowsEqualButStamp(a, b slashcmd.Row) bool {
	a.UpdatedAt, b.UpdatedAt = "", ""
	return reflect.DeepEqual(a, b)
}

type staticState struct {
	has  bool
	desc *string
}

// runProgram runs p on a Set and on the model side by side.
func runProgram(t *testing.T, p program) {
	t.Helper()
	b := newBook()
	m := model{}
	for i, tx := range p {
		now := iso(i + 1)
		before := map[string]staticState{}
		for name, e := range m {
			before[name] = staticState{e.has, e.static}
		}

		s := b.set(at(i + 1))
		for _, o := range tx {
			err := applyToSet(s, o)
			if o.kind == opReplaceOwned && o.invalid {
				var invalid *slashcmd.InvalidError
				require.ErrorAs(t, err, &invalid, "%s", p)
			} else {
				require.NoError(t, err, "%s", p)
			}
			m.apply(o, now)
		}

		// What the model expects: the rows, and the changes against the rows before.
		want := []change{}
		wantRows := []slashcmd.Row{}
		names := make([]string, 0, len(m))
		for name := range m {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			e := m[name]
			after := e.effective(name, now)
			switch {
			case e.row == nil && after != nil:
				want = append(want, ins(after))
			case e.row != nil && after == nil:
				want = append(want, del(name))
			case e.row != nil && !rowsEqualButStamp(*e.row, *after):
				want = append(want, upd(after))
			case e.row != nil && (before[name].has != e.has || !sameDesc(before[name].desc, e.static)):
				want = append(want, stored(name))
			}
			if after != nil {
				wantRows = append(wantRows, *after)
				e.row = after
			} else {
				require.Empty(t, e.layers)
				require.False(t, e.has)
				delete(m, name)
			}
		}

		got := s.Changes()
		require.Equal(t, want, simplify(got), "changes of tx %d of\n%s", i+1, p)
		require.Equal(t, wantRows, append([]slashcmd.Row{}, s.List()...), "rows after tx %d of\n%s", i+1, p)
		b.commit(t, got)
		require.Equal(t, wantRows, b.rows(), "materialized rows after tx %d of\n%s", i+1, p)
		for _, r := range wantRows {
			g, ok := s.Get(r.Name)
			require.True(t, ok)
			require.Equal(t, r, g)
		}
	}
}

func applyToSet(s *slashcmd.Set, o modelOp) error {
	switch o.kind {
	case opRegister:
		return s.Register(reg(o.name, o.owner, o.desc))
	case opUnregister:
		s.Unregister(o.name, o.owner)
		return nil
	case opReplaceOwned:
		regs := make([]slashcmd.Registration, 0, len(o.cmds)+1)
		for _, c := range o.cmds {
			regs = append(regs, reg(c.name, "", c.desc))
		}
		if o.invalid {
			regs = append(regs, reg("Not-Valid", "", nil))
		}
		return s.ReplaceOwned(o.owner, regs)
	default:
		defs := make([]slashcmd.Definition, 0, len(o.cmds))
		for _, c := range o.cmds {
			defs = append(defs, def(c.name, c.desc))
		}
		s.SetStatic(defs)
		return nil
	}
}

func TestModelRandomPrograms(t *testing.T) {
	r := rand.New(rand.NewSource(20260301))
	for i := 0; i < 500; i++ {
		runProgram(t, randomProgram(r, 30))
	}
}

func TestModelQuick(t *testing.T) {
	err := quick.Check(func(p program) bool {
		ok := true
		t.Run("", func(t *testing.T) {
			defer func() {
				if t.Failed() {
					ok = false
				}
			}()
			runProgram(t, p)
		})
		return ok
	}, &quick.Config{MaxCount: 300, Rand: rand.New(rand.NewSource(7))})
	require.NoError(t, err)
}

// The model must be able to fail: a Set that ignored the "identical top layer" rule
// (re-stamping it) would be caught by the comparison of the rows.
func TestModelDetectsADifference(t *testing.T) {
	m := model{}
	m.register("alpha", "x", sp("one"), iso(1))
	first := m["alpha"].effective("alpha", iso(1))
	m["alpha"].row = first
	m.register("alpha", "x", sp("one"), iso(2))
	require.Equal(t, first, m["alpha"].effective("alpha", iso(2)), "identical registration keeps the layer")
	m.register("alpha", "y", sp("one"), iso(3))
	require.False(t, rowsEqualButStamp(*first, *m["alpha"].effective("alpha", iso(3))))
}
