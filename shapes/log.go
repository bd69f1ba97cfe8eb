package shapes

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/entityd/entityd/streamdb"
)

// position is a place in shape_log: every change at or before (txid, id) is applied.
type position struct {
	txid uint64
	id   int64
}

func (p position) String() string {
	return strconv.FormatUint(p.txid, 10) + "_" + strconv.FormatInt(p.id, 10)
}

func (p position) less(q position) bool { return p.txid < q.txid || (p.txid == q.txid && p.id < q.id) }

// parsePosition reads "<txid>_<id>".
func parsePosition(s string) (position, bool) {
	a, b, ok := strings.Cut(s, "_")
	if !ok {
		return position{}, false
	}
	t, err1 := strconv.ParseUint(a, 10, 64)
	i, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || i < 0 {
		return position{}, false
	}
	return position{t, i}, true
}

// message is one entry of a shape response.
type message struct {
	pk      string          // the row's primary key (scoping); not sent
	Key     string          `json:"key,omitempty"`
	Value   json.RawMessage `json:"value,omitempty"`
	Headers map[string]any  `json:"headers"`
}

func upToDate(p position) message {
	return message{Headers: map[string]any{"control": "up-to-date", "global_last_seen_lsn": strconv.FormatUint(p.txid, 10)}}
}

// view is what a shape request selects: a table, its rows that pass a where, the
// chosen columns.
type view struct {
	t     *table
	where where
	cols  []string
}

// row renders a stored value (all columns, text-encoded) as the view shows it, or
// reports that the row is outside the view.
func (v *view) row(value []byte, op string) (json.RawMessage, bool, error) {
	var all map[string]*string
	if err := json.Unmarshal(value, &all); err != nil {
		return nil, false, err
	}
	if op != "delete" && !v.where.match(all) {
		return nil, false, nil
	}
	out := make(map[string]*string, len(v.cols))
	for _, c := range v.cols {
		if op == "delete" && c != v.t.key {
			continue
		}
		out[c] = all[c]
	}
	b, err := json.Marshal(out)
	return b, true, err
}

// changes reads the view's final changes after from, at most limit of them, and the
// position to continue from; exhausted reports that nothing final is left after it.
func changes(ctx context.Context, db streamdb.DB, v *view, from position, limit int) ([]message, position, bool, error) {
	// The horizon before the read: every change older than it is final and, when the
	// read is exhausted, was returned; so the offset may move up to it.
	var horizon string
	if err := db.QueryRow(ctx, sqlHorizon).Scan(&horizon); err != nil {
		return nil, from, false, err
	}
	h, err := strconv.ParseUint(horizon, 10, 64)
	if err != nil {
		return nil, from, false, fmt.Errorf("shapes: horizon %q: %w", horizon, err)
	}
	rows, err := db.Query(ctx, sqlChangesSince, v.t.name, strconv.FormatUint(from.txid, 10), from.id, limit)
	if err != nil {
		return nil, from, false, err
	}
	defer rows.Close()
	var out []message
	at, n := from, 0
	for rows.Next() {
		var txid, key, op string
		var id int64
		var value []byte
		if err := rows.Scan(&txid, &id, &key, &op, &value); err != nil {
			return nil, from, false, err
		}
		n++
		t, _ := strconv.ParseUint(txid, 10, 64)
		at = position{t, id}
		val, in, err := v.row(value, op)
		if err != nil {
			return nil, from, false, err
		}
		if !in {
			// An update that takes a row out of a where is a delete for this shape; an
			// insert outside it is nothing. Deletes always pass (the key alone).
			if op != "update" {
				continue
			}
			op = "delete"
			if val, _, err = v.row(value, "delete"); err != nil {
				return nil, from, false, err
			}
		}
		out = append(out, message{pk: key, Key: v.t.keyOf(key), Value: val,
			Headers: map[string]any{"operation": op, "relation": []string{"public", v.t.name}}})
	}
	if err := rows.Err(); err != nil {
		return nil, from, false, err
	}
	exhausted := n < limit
	if exhausted && at.less(position{txid: h}) {
		at = position{txid: h}
	}
	return out, at, exhausted, nil
}
