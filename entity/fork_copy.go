package entity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/slashcmd/slashdb"
	"github.com/entityd/entityd/streamdb"
)

// copySubtree is the fork's one transaction: it locks the subtree, checks that the wait's
// findings still hold (errForkRetry otherwise), and writes every copy.
func (r *Registry) copySubtree(ctx context.Context, req ForkRequest, tree []*Entity, cut *forkCut, forkID string) (*ForkResult, error) {
	waitFor := map[string]bool{}
	for i, e := range tree {
		if cut == nil || i > 0 {
			waitFor[e.URL] = true
		}
	}
	var res *ForkResult
	var afters []func()
	err := r.streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		res, afters = &ForkResult{Sources: map[string]string{}, ForkSeq: map[string]int64{}}, nil
		locked, err := r.lockSubtree(ctx, tx, tree, waitFor, cut == nil)
		if err != nil {
			return err
		}
		suffix := randomHex(8)
		urls := make(map[string]string, len(tree))
		for i, e := range tree {
			id := forkInstanceID(e.InstanceID, suffix, MaxInstanceIDLength)
			if i == 0 && req.InstanceID != "" {
				id = req.InstanceID
			}
			urls[e.URL] = entitypath.URL(e.Type, id)
		}
		strs := forkStringMap(urls)
		parents := map[string]bool{} // the entities some of whose children are forked too
		for _, e := range tree[1:] {
			parents[*e.Parent] = true
		}
		now := time.Now()
		for i, src := range tree {
			src = locked[src.URL]
			url := urls[src.URL]
			_, id, _ := cutURL(url)
			var parent *string
			tags := src.Tags
			var c *forkCut
			if i == 0 {
				c = cut
				if req.Parent != "" {
					parent = &req.Parent
				}
				if len(req.Tags) > 0 {
					tags = maps.Clone(tags)
					if tags == nil {
						tags = map[string]string{}
					}
					maps.Copy(tags, req.Tags)
				}
			} else if src.Parent != nil {
				p := urls[*src.Parent]
				parent = &p
			}
			if n := r.maxTags; n > 0 && len(tags) > n {
				return ErrTooManyTags
			}
			m, err := forkStreams(ctx, tx, src, url, c)
			if err != nil {
				return err
			}
			args := remapJSON(src.SpawnArgs, strs)
			e, err := copyInsert(ctx, tx, src, url, id, m.ID, tags, args, parent, req.CreatedBy)
			if err != nil {
				return err
			}
			if err := slashdb.CopyForFork(ctx, tx, src.URL, url); err != nil {
				return err
			}
			events, err := r.reconcileEvents(ctx, src, e, m, urls, parents[src.URL], forkID, now)
			if err != nil {
				return err
			}
			if _, err := tx.Append(ctx, &streamdb.AppendRequest{Path: m.Path, Messages: events}); err != nil {
				return fmt.Errorf("entity: fork reconciliation events: %w", err)
			}
			if r.onSpawn != nil {
				t, err := r.Type(ctx, e.Type)
				if err != nil && !errors.Is(err, ErrTypeNotFound) {
					return err
				}
				if t != nil {
					after, err := r.onSpawn(ctx, tx, e, t)
					if err != nil {
						return err
					}
					if after != nil {
						afters = append(afters, after)
					}
				}
			}
			res.Entities = append(res.Entities, e)
			res.Sources[e.URL], res.ForkSeq[e.URL] = src.URL, m.ForkSeq
		}
		res.Root = res.Entities[0]
		if _, err := tx.Exec(ctx, sqlReleaseForkLocks, forkID); err != nil {
			return err
		}
		if req.InTx != nil {
			if err := req.InTx(ctx, tx, res, urls); err != nil {
				return err
			}
		}
		res.Txid, err = currentTxid(ctx, tx)
		return err
	})
	if err != nil {
		if isUniqueViolation(err) {
			return nil, ErrDuplicate
		}
		return nil, err
	}
	for _, after := range afters {
		after()
	}
	return res, nil
}

// cutURL splits an entity URL "/<type>/<id>".
func cutURL(url string) (typ, id string, ok bool) {
	return strings.Cut(strings.TrimPrefix(url, "/"), "/")
}

// forkStringMap maps each forked entity's URL and main stream path to its copy's: the
// strings a copy's args and state are rewritten with.
func forkStringMap(urls map[string]string) map[string]string {
	out := make(map[string]string, 2*len(urls))
	for from, to := range urls {
		out[from] = to
		out[entitypath.Main(from)] = entitypath.Main(to)
	}
	return out
}

// remapJSON returns v with every string equal to a key of strs replaced (nil: v is
// absent or has nothing to replace, and the copy keeps the source's bytes).
func remapJSON(v json.RawMessage, strs map[string]string) json.RawMessage {
	if len(v) == 0 {
		return nil
	}
	var x any
	if json.Unmarshal(v, &x) != nil {
		return nil
	}
	changed := false
	var walk func(any) any
	walk = func(x any) any {
		switch t := x.(type) {
		case string:
			if to, ok := strs[t]; ok {
				changed = true
				return to
			}
		case []any:
			for i := range t {
				t[i] = walk(t[i])
			}
		case map[string]any:
			for k := range t {
				t[k] = walk(t[k])
			}
		}
		return x
	}
	x = walk(x)
	if !changed {
		return nil
	}
	out, err := json.Marshal(x)
	if err != nil {
		return nil
	}
	return out
}

// reconcileEvents are the events appended to a copy after what it inherits: an
// entity_created update with the copy's type, args and parent, and, for an entity whose
// children were forked with it, its child manifests and child statuses naming the
// copies. Each carries headers.forkedFrom (the source's URL).
func (r *Registry) reconcileEvents(ctx context.Context, src, cp *Entity, m *streamdb.Meta, urls map[string]string, hasChildren bool, forkID string, now time.Time) ([][]byte, error) {
	txid := "fork-" + forkID
	var created rawjson.Object
	created.String("entity_type", cp.Type).Time("timestamp", now)
	if cp.SpawnArgs != nil {
		created.Raw("args", cp.SpawnArgs)
	} else {
		created.Raw("args", []byte("{}"))
	}
	if cp.Parent != nil {
		created.String("parent_url", *cp.Parent)
	}
	events := [][]byte{forkEvent("entity_created", "entity-created", "update", created.Bytes(), txid, src.URL, now)}

	if !hasChildren {
		return events, nil
	}
	srcMeta, err := r.streams.Lookup(ctx, src.MainStream())
	if err != nil {
		return nil, err
	}
	st, err := r.collectState(ctx, srcMeta, m.ForkSeq, "manifest", "child_status")
	if err != nil {
		return nil, err
	}
	for _, key := range slices.Sorted(maps.Keys(st["manifest"])) {
		var v map[string]any
		if json.Unmarshal(st["manifest"][key], &v) != nil || v["kind"] != "child" {
			continue
		}
		from, _ := v["entity_url"].(string)
		to, ok := urls[from]
		if !ok {
			continue
		}
		typ, id, _ := cutURL(to)
		v["id"], v["entity_url"] = id, to
		if t, ok := v["entity_type"].(string); ok {
			typ = t
		}
		newKey := "child:" + typ + ":" + id
		v["key"] = newKey
		b, _ := json.Marshal(v)
		events = append(events,
			forkEvent("manifest", key, "delete", nil, txid, src.URL, now),
			forkEvent("manifest", newKey, "insert", b, txid, src.URL, now))
	}
	for _, key := range slices.Sorted(maps.Keys(st["child_status"])) {
		var v map[string]any
		if json.Unmarshal(st["child_status"][key], &v) != nil {
			continue
		}
		from, _ := v["entity_url"].(string)
		to, ok := urls[from]
		if !ok {
			continue
		}
		typ, _, _ := cutURL(to)
		v["entity_url"], v["entity_type"] = to, typ
		b, _ := json.Marshal(v)
		events = append(events, forkEvent("child_status", key, "update", b, txid, src.URL, now))
	}
	return events, nil
}

// forkEvent renders a State Protocol event of the fork's reconciliation.
func forkEvent(typ, key, op string, value []byte, txid, forkedFrom string, now time.Time) []byte {
	var o rawjson.Object
	o.String("type", typ).String("key", key)
	if value != nil {
		o.Raw("value", value)
	}
	var h rawjson.Object
	h.String("operation", op).String("txid", txid).Time("timestamp", now).String("forkedFrom", forkedFrom)
	o.Raw("headers", h.Bytes())
	return o.Bytes()
}
