package slashdb_test

import (
	"time"

	"github.com/entityd/entityd/slashcmd"
)

// Helpers shared with slashcmd's model tests (a test package cannot import another's).

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
