package entity

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/entityd/entityd/streamdb"
)

// forkCut is where a pointer fork cuts the root's stream: after message seq, whose end
// offset is end.
type forkCut struct {
	seq int64
	end streamdb.Offset
}

// forkCut resolves the request's pointer or anchor on the root's stream (nil: none). A
// pointer {offset X, sub N} names the N-th event after the event that ends at X (or
// after the start when X is null), as Durable Streams reads a fork offset with a
// sub-offset; X must be the end of an event and N at least 1 and within the stream.
func (r *Registry) forkCut(ctx context.Context, root *Entity, req ForkRequest) (*forkCut, error) {
	if req.Pointer == nil && !req.LatestCompletedRun {
		return nil, nil
	}
	m, err := r.streams.Lookup(ctx, root.MainStream())
	if err != nil {
		return nil, fmt.Errorf("entity: fork source stream: %w", err)
	}
	var seq int64
	if req.Pointer != nil {
		if seq, err = r.pointerSeq(ctx, m, req.Pointer); err != nil {
			return nil, err
		}
	} else {
		if seq, err = r.lastCompletedRun(ctx, m); err != nil {
			return nil, err
		}
	}
	var end streamdb.Offset
	err = r.streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		end, err = tx.OffsetAfter(ctx, m.ID, seq)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &forkCut{seq: seq, end: end}, nil
}

func (r *Registry) pointerSeq(ctx context.Context, m *streamdb.Meta, p *ForkPointer) (int64, error) {
	var base int64
	if p.Offset != nil {
		off, kind, err := streamdb.ParseOffset(*p.Offset)
		if err != nil || kind != streamdb.OffsetConcrete || off.Seq > m.Tail.Seq {
			return 0, &ForkPointerError{Message: "fork_pointer.offset does not match the end of any event of " + m.Path}
		}
		var at streamdb.Offset
		err = r.streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
			at, err = tx.OffsetAfter(ctx, m.ID, off.Seq)
			return err
		})
		if err != nil {
			return 0, err
		}
		if at != off {
			return 0, &ForkPointerError{Message: "fork_pointer.offset does not match the end of any event of " + m.Path}
		}
		base = off.Seq
	}
	past := m.Tail.Seq - base
	if p.Sub < 1 || p.Sub > past {
		return 0, &ForkPointerError{Message: fmt.Sprintf(
			"fork_pointer.sub_offset %d is out of range past its offset on %s (valid: 1..%d)", p.Sub, m.Path, past)}
	}
	return base + p.Sub, nil
}

// runScanWindow is how many messages lastCompletedRun reads at a time, from the tail
// back: the last completed run is usually among the last few events.
const runScanWindow = 512

// runScanWindows is how many windows lastCompletedRun reads before it asks Postgres.
const runScanWindows = 4

// lastCompletedRun is the message number of the last run event whose status is
// completed: the latest_completed_run anchor (what the UI's "fork from here" offers).
// It reads the stream backwards, a window at a time, and stops at the first match; past
// runScanWindows windows, the rest is searched in one pass in Postgres.
func (r *Registry) lastCompletedRun(ctx context.Context, m *streamdb.Meta) (int64, error) {
	hi := m.Tail.Seq
	for n := 0; hi > 0 && n < runScanWindows; hi, n = hi-runScanWindow, n+1 {
		lo := max(hi-runScanWindow, 0)
		var from, to streamdb.Offset
		err := r.streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
			var err error
			if from, err = tx.OffsetAfter(ctx, m.ID, lo); err != nil {
				return err
			}
			to, err = tx.OffsetAfter(ctx, m.ID, hi)
			return err
		})
		if err != nil {
			return 0, err
		}
		var window []streamdb.Message
		for from.Seq < to.Seq {
			msgs, err := r.streams.Read(ctx, m, from, to)
			if err != nil {
				return 0, err
			}
			if len(msgs) == 0 {
				return 0, fmt.Errorf("entity: fork: %s ended at %d before %d", m.Path, from.Seq, to.Seq)
			}
			window = append(window, msgs...)
			from = msgs[len(msgs)-1].End
		}
		for i := len(window) - 1; i >= 0; i-- {
			if completedRun(window[i].Data) {
				return window[i].End.Seq, nil
			}
		}
	}
	var last int64
	if hi > 0 {
		err := r.streams.ScanContaining(ctx, m, hi, [][]byte{[]byte(`"run"`)}, func(seq int64, data []byte) error {
			if completedRun(data) {
				last = seq
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	if last > 0 {
		return last, nil
	}
	return 0, &ForkPointerError{Message: "Source " + m.Path + " has no completed run to fork from"}
}

// completedRun reports whether data is a run event (not a delete) whose status is
// completed.
func completedRun(data []byte) bool {
	if !bytes.Contains(data, []byte(`"run"`)) {
		return false
	}
	var ev stateEvent
	if json.Unmarshal(data, &ev) != nil || ev.Type != "run" || ev.Headers.Operation == "delete" {
		return false
	}
	var v struct {
		Status string `json:"status"`
	}
	return json.Unmarshal(ev.Value, &v) == nil && v.Status == "completed"
}

// stateRows are the rows of one collection (manifest, child_status) after a stream's
// events, by key.
type stateRows map[string]json.RawMessage

// collectState reduces the events of m up to message upto to the rows of the named
// collections (a delete removes the row).
func (r *Registry) collectState(ctx context.Context, m *streamdb.Meta, upto int64, types ...string) (map[string]stateRows, error) {
	out := map[string]stateRows{}
	needles := make([][]byte, len(types))
	for i, t := range types {
		out[t] = stateRows{}
		needles[i] = []byte(`"` + t + `"`)
	}
	// only the messages naming one of the types leave Postgres
	err := r.streams.ScanContaining(ctx, m, upto, needles, func(_ int64, data []byte) error {
		var ev stateEvent
		if json.Unmarshal(data, &ev) != nil {
			return nil
		}
		rows, ok := out[ev.Type]
		if !ok || ev.Key == "" {
			return nil
		}
		if ev.Headers.Operation == "delete" {
			delete(rows, ev.Key)
		} else if len(ev.Value) > 0 && ev.Value[0] == '{' {
			rows[ev.Key] = ev.Value
		}
		return nil
	})
	return out, err
}

// manifestChild is what the fork reads of a child manifest row.
type manifestChild struct {
	Kind      string `json:"kind"`
	EntityURL string `json:"entity_url"`
}

// childrenAt is the set of entity URLs the root's manifest names as children after its
// message seq: the descendants a pointer fork keeps (the reference's rule).
func (r *Registry) childrenAt(ctx context.Context, root *Entity, seq int64) (map[string]bool, error) {
	m, err := r.streams.Lookup(ctx, root.MainStream())
	if err != nil {
		return nil, err
	}
	st, err := r.collectState(ctx, m, seq, "manifest")
	if err != nil {
		return nil, err
	}
	kept := map[string]bool{}
	for _, v := range st["manifest"] {
		var c manifestChild
		if json.Unmarshal(v, &c) == nil && c.Kind == "child" && c.EntityURL != "" {
			kept[c.EntityURL] = true
		}
	}
	return kept, nil
}

// keepChildren is tree (parents first) cut to the root, its children in kept and all
// their descendants.
func keepChildren(tree []*Entity, rootURL string, kept map[string]bool) []*Entity {
	in := map[string]bool{rootURL: true}
	out := []*Entity{tree[0]}
	for _, e := range tree[1:] {
		if e.Parent == nil {
			continue
		}
		if (*e.Parent == rootURL && kept[e.URL]) || (*e.Parent != rootURL && in[*e.Parent]) {
			in[e.URL] = true
			out = append(out, e)
		}
	}
	return out
}
