package shapes

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/entityd/entityd/streamdb"
)

// A snapshot is read in a repeatable-read transaction, and the Postgres snapshot that
// transaction read at (pg_current_snapshot) goes with it: the changes that follow it
// are those of the transactions it does not see. Its horizon (xmin, the oldest
// transaction running) is not enough: a younger transaction may have committed before
// the snapshot, and its changes are in the rows already. Read again as changes after
// the horizon, they would be an insert of a row the client holds, or an update it has
// (in the same response when the older transaction has ended by then, else in a later
// one).
//
// A snapshot larger than one response is served in pages, in key order, each read in
// its own repeatable-read transaction: the rows after the last key served, and the
// changes of the rows served before that the page's snapshot sees and the previous
// page's did not. So every row the client holds is as the latest page's snapshot shows
// it, and the changes after that snapshot follow the last page.

// snap is a Postgres snapshot as pg_current_snapshot writes it ("xmin:xmax:xip,…"): a
// transaction below xmin is seen (it ended before the snapshot), one at or above xmax
// is not, and one between them is unless xip lists it (it was running).
type snap struct {
	xmin, xmax uint64
	xip        []uint64 // ascending, each in [xmin, xmax)
}

func (s snap) String() string {
	var b strings.Builder
	b.WriteString(strconv.FormatUint(s.xmin, 10) + ":" + strconv.FormatUint(s.xmax, 10) + ":")
	for i, x := range s.xip {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatUint(x, 10))
	}
	return b.String()
}

// parseSnap reads a snapshot String (or Postgres) wrote.
func parseSnap(s string) (snap, bool) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return snap{}, false
	}
	xmin, err1 := strconv.ParseUint(parts[0], 10, 64)
	xmax, err2 := strconv.ParseUint(parts[1], 10, 64)
	if err1 != nil || err2 != nil || xmin > xmax {
		return snap{}, false
	}
	xip, ok := parseXip(parts[2], xmin, xmax)
	return snap{xmin: xmin, xmax: xmax, xip: xip}, ok
}

// parseXip reads a comma-separated, strictly ascending list of transactions in
// [lo, hi).
func parseXip(s string, lo, hi uint64) ([]uint64, bool) {
	if s == "" {
		return nil, true
	}
	var out []uint64
	for _, p := range strings.Split(s, ",") {
		x, err := strconv.ParseUint(p, 10, 64)
		if err != nil || x < lo || x >= hi || (len(out) > 0 && x <= out[len(out)-1]) {
			return nil, false
		}
		out = append(out, x)
	}
	return out, true
}

// sees reports whether the snapshot sees transaction txid.
func (s snap) sees(txid uint64) bool {
	if txid < s.xmin {
		return true
	}
	if txid >= s.xmax {
		return false
	}
	for _, x := range s.xip {
		if x == txid {
			return false
		}
	}
	return true
}

// from is the part of the snapshot that matters to transactions at or after txid: it
// sees the same of those (and every older one). Zero when it sees none of them.
func (s snap) from(txid uint64) snap {
	if txid >= s.xmax {
		return snap{}
	}
	if txid <= s.xmin {
		return s
	}
	out := snap{xmin: txid, xmax: s.xmax}
	for _, x := range s.xip {
		if x >= txid {
			out.xip = append(out.xip, x)
		}
	}
	return out
}

// skipArgs are the ChangesSince and PageChanges arguments that leave out the changes of
// the transactions the snapshot sees at or above its xmin: those below xmax that xip
// does not list.
func (s snap) skipArgs() (xmax string, xip []string) {
	xip = make([]string, len(s.xip))
	for i, x := range s.xip {
		xip[i] = strconv.FormatUint(x, 10)
	}
	return strconv.FormatUint(s.xmax, 10), xip
}

// snapshotCursor is where the next page of a snapshot starts: the snapshot the last
// page was read at and the last key served. Its offset is
// "s<xmin>:<xmax>:<xip,…>_<last key, base64url>", which no log offset can be (those
// start with a digit).
type snapshotCursor struct {
	seen  snap
	after string
}

func (c snapshotCursor) String() string {
	return "s" + c.seen.String() + "_" + base64.RawURLEncoding.EncodeToString([]byte(c.after))
}

// parseSnapshotCursor reads an offset String wrote. stale reports a cursor of the
// earlier form "s<horizon>_<key>", which carried too little to finish its snapshot.
func parseSnapshotCursor(s string) (c snapshotCursor, ok, stale bool) {
	rest, ok := strings.CutPrefix(s, "s")
	if !ok {
		return c, false, false
	}
	sn, k, ok := strings.Cut(rest, "_")
	if !ok {
		return c, false, false
	}
	after, err := base64.RawURLEncoding.DecodeString(k)
	if err != nil || len(after) == 0 {
		return c, false, false
	}
	seen, ok := parseSnap(sn)
	if !ok {
		_, err := strconv.ParseUint(sn, 10, 64)
		return c, false, err == nil
	}
	return snapshotCursor{seen: seen, after: string(after)}, true, false
}

// querier is a connection, pool or transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// snapshotPage reads a page of the view in one repeatable-read transaction: up to limit
// rows after the previous page's last key (every row for the first page, prev nil),
// preceded by the changes of the rows served before that this transaction's snapshot
// sees and prev's did not. next is where the following page starts, or, when no rows
// remain (more false), the snapshot the changes after the page follow.
func snapshotPage(ctx context.Context, db streamdb.DB, v *view, prev *snapshotCursor, limit int) (out []message, next snapshotCursor, more bool, err error) {
	tx, err := db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, next, false, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// the first statement: it fixes the transaction's snapshot, and returns it
	var s string
	if err := tx.QueryRow(ctx, sqlSnapshot).Scan(&s); err != nil {
		return nil, next, false, err
	}
	var ok bool
	if next.seen, ok = parseSnap(s); !ok {
		return nil, next, false, fmt.Errorf("shapes: snapshot %q", s)
	}
	if prev != nil {
		xmax, xip := prev.seen.skipArgs()
		rows, err := tx.Query(ctx, sqlPageChanges, v.t.name, prev.after, strconv.FormatUint(prev.seen.xmin, 10), xmax, xip)
		if err != nil {
			return nil, next, false, err
		}
		if out, _, _, err = readChanges(rows, v); err != nil {
			return nil, next, false, err
		}
	}
	after := ""
	if prev != nil {
		after = prev.after
	}
	rows, last, more, err := pageRows(ctx, tx, v, after, limit)
	if err != nil {
		return nil, next, false, err
	}
	next.after = last
	return append(out, rows...), next, more, nil
}

// pageRows reads up to limit rows after key after and renders those in the view.
// more reports that rows remain after the last one read (last).
func pageRows(ctx context.Context, q querier, v *view, after string, limit int) (out []message, last string, more bool, err error) {
	sql, args, pushed := v.pageQuery(after, limit+1)
	if pushed {
		// With conditions pushed down the best plan depends on their values (a type with
		// three entities wants its index; one with a million, the key order), which a
		// generic prepared plan cannot see: send the values inline (pgx quotes them).
		args = append([]any{pgx.QueryExecModeSimpleProtocol}, args...)
	}
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, "", false, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var key string
		var value []byte
		if err := rows.Scan(&key, &value); err != nil {
			return nil, "", false, err
		}
		if n == limit {
			more = true
			break
		}
		n++
		last = key
		val, in, all, err := v.row(value, "insert")
		if err != nil {
			return nil, "", false, err
		}
		if in {
			out = append(out, message{pk: key, row: all, Key: v.t.keyOf(key), Value: val,
				Headers: map[string]any{"operation": "insert", "relation": []string{"public", v.t.name}}})
		}
	}
	return out, last, more, rows.Err()
}

// pageQuery is the snapshot page query with the where's equality conditions on the
// table's filter columns added (= and IN; the others are left to where.match); pushed
// reports that there were any.
func (v *view) pageQuery(after string, limit int) (sql string, args []any, pushed bool) {
	var b strings.Builder
	b.WriteString(v.t.rows)
	args = []any{after}
	for _, c := range v.where {
		col, ok := v.t.filters[c.column]
		if !ok || (c.op != "=" && c.op != "in") {
			continue
		}
		args = append(args, c.values)
		fmt.Fprintf(&b, " AND %s = ANY($%d::text[])", col, len(args))
		pushed = true
	}
	args = append(args, limit)
	fmt.Fprintf(&b, " ORDER BY key LIMIT $%d", len(args))
	return b.String(), args, pushed
}
