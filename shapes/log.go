package shapes

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

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
	pk      string             // the row's primary key (scoping); not sent
	row     map[string]*string // every stored column of the row (scoping); not sent
	Key     string             `json:"key,omitempty"`
	Value   json.RawMessage    `json:"value,omitempty"`
	Headers map[string]any     `json:"headers"`
}

func upToDate(p position) message {
	return message{Headers: map[string]any{"control": "up-to-date", "global_last_seen_lsn": strconv.FormatUint(p.txid, 10)}}
}

// snapshotEnd ends a snapshot as Electric's sync service does: the Postgres snapshot
// its rows are as of, so a client awaiting a txid the snapshot saw (its change is in the
// rows, and never comes as a change message) knows it has it.
func snapshotEnd(s snap) message {
	xip := make([]string, len(s.xip))
	for i, x := range s.xip {
		xip[i] = strconv.FormatUint(x, 10)
	}
	return message{Headers: map[string]any{"control": "snapshot-end",
		"xmin": strconv.FormatUint(s.xmin, 10), "xmax": strconv.FormatUint(s.xmax, 10), "xip_list": xip}}
}

// view is what a shape request selects: a table, its rows that pass a where, the
// chosen columns.
type view struct {
	t     *table
	where where
	cols  []string
}

// row renders a stored value (all columns, text-encoded) as the view shows it, or
// reports that the row is outside the view; all is every stored column.
func (v *view) row(value []byte, op string) (_ json.RawMessage, in bool, all map[string]*string, err error) {
	if err := json.Unmarshal(value, &all); err != nil {
		return nil, false, nil, err
	}
	if op != "delete" && !v.where.match(all) {
		return nil, false, all, nil
	}
	out := make(map[string]*string, len(v.cols))
	for _, c := range v.cols {
		if op == "delete" && c != v.t.key {
			continue
		}
		out[c] = all[c]
	}
	b, err := json.Marshal(out)
	return b, true, all, err
}

// offset is where a client continues in shape_log: it holds every change at or before
// pos, and those of the transactions seen sees: the snapshot its rows were read at, kept
// from pos.txid on (zero once pos is past every transaction it sees). A transaction the
// snapshot saw may sort after pos (it is younger than one that was still running), and
// its changes are in the rows already: they are skipped, not served again. Its string
// is "<txid>_<id>", or with such transactions ahead "<txid>_<id>_<xmax>", followed by
// ":<xip>,…" when the snapshot saw some of [txid, xmax) running: every transaction in
// [txid, xmax) but those is skipped.
type offset struct {
	pos  position
	seen snap
}

func (o offset) String() string {
	if o.seen.xmax <= o.pos.txid {
		return o.pos.String()
	}
	s := o.pos.String() + "_" + strconv.FormatUint(o.seen.xmax, 10)
	for i, x := range o.seen.xip {
		if i == 0 {
			s += ":"
		} else {
			s += ","
		}
		s += strconv.FormatUint(x, 10)
	}
	return s
}

// parseOffset reads an offset String wrote.
func parseOffset(s string) (offset, bool) {
	p, rest, _ := strings.Cut(s, "_")
	id, seen, hasSeen := strings.Cut(rest, "_")
	pos, ok := parsePosition(p + "_" + id)
	if !ok {
		return offset{}, false
	}
	o := offset{pos: pos}
	if !hasSeen {
		return o, true
	}
	xmax, xips, listed := strings.Cut(seen, ":")
	o.seen.xmin = pos.txid
	var err error
	if o.seen.xmax, err = strconv.ParseUint(xmax, 10, 64); err != nil || o.seen.xmax <= pos.txid || (listed && xips == "") {
		return offset{}, false
	}
	o.seen.xip, ok = parseXip(xips, pos.txid, o.seen.xmax)
	return o, ok
}

// changes reads the view's final changes after from, at most limit of them, and the
// offset to continue from; exhausted reports that nothing final is left after it.
func changes(ctx context.Context, db streamdb.DB, v *view, from offset, limit int) ([]message, offset, bool, error) {
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
	xmax, xip := from.seen.skipArgs()
	rows, err := db.Query(ctx, sqlChangesSince, v.t.name, strconv.FormatUint(from.pos.txid, 10), from.pos.id, limit, xmax, xip)
	if err != nil {
		return nil, from, false, err
	}
	out, at, n, err := readChanges(rows, v)
	if err != nil {
		return nil, from, false, err
	}
	if n == 0 {
		at = from.pos
	}
	exhausted := n < limit
	if exhausted && at.less(position{txid: h}) {
		at = position{txid: h}
	}
	return out, offset{pos: at, seen: from.seen.from(at.txid)}, exhausted, nil
}

// readChanges renders the view's changes among rows (txid, id, key, operation, value)
// and closes them. last is the position of the last one read, n how many were read.
func readChanges(rows pgx.Rows, v *view) (out []message, last position, n int, err error) {
	defer rows.Close()
	for rows.Next() {
		var txid, key, op string
		var id int64
		var value []byte
		if err := rows.Scan(&txid, &id, &key, &op, &value); err != nil {
			return nil, last, 0, err
		}
		n++
		t, err := strconv.ParseUint(txid, 10, 64)
		if err != nil {
			return nil, last, 0, fmt.Errorf("shapes: txid %q: %w", txid, err)
		}
		last = position{t, id}
		val, in, all, err := v.row(value, op)
		if err != nil {
			return nil, last, 0, err
		}
		if !in {
			// An update that takes a row out of a where is a delete for this shape; an
			// insert outside it is nothing. Deletes always pass (the key alone).
			if op != "update" {
				continue
			}
			op = "delete"
			if val, _, _, err = v.row(value, "delete"); err != nil {
				return nil, last, 0, err
			}
		}
		// txids names the transaction that made the change, as Electric's sync service
		// does: the txid the HTTP API answered for that write (a spawn's, a signal's, a
		// tag's), which clients await (awaitTxId) before trusting their optimistic state.
		out = append(out, message{pk: key, row: all, Key: v.t.keyOf(key), Value: val,
			Headers: map[string]any{"operation": op, "relation": []string{"public", v.t.name}, "txids": []uint64{t}}})
	}
	return out, last, n, rows.Err()
}
