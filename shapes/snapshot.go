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

// A snapshot larger than one response is served in pages, in key order. The first page
// is read in a repeatable-read transaction that fixes the horizon; the next ones read
// the rows after the last key served, as they are then. The changes after the horizon
// follow the last page, so a row that changed while the pages were read is corrected
// by its change (a shape applies rows and changes as upserts, and a delete of a row it
// never had is a no-op): the shape ends as the rows are, as with a one-page snapshot.

// snapshotCursor is where the next page of a snapshot starts: the first page's horizon
// and the last key served. Its offset is "s<horizon>_<last key, base64url>", which no
// log position can be (those are "<txid>_<id>").
type snapshotCursor struct {
	horizon uint64
	after   string
}

func (c snapshotCursor) String() string {
	return "s" + strconv.FormatUint(c.horizon, 10) + "_" + base64.RawURLEncoding.EncodeToString([]byte(c.after))
}

// parseSnapshotCursor reads an offset String wrote.
func parseSnapshotCursor(s string) (snapshotCursor, bool) {
	rest, ok := strings.CutPrefix(s, "s")
	if !ok {
		return snapshotCursor{}, false
	}
	h, k, ok := strings.Cut(rest, "_")
	if !ok {
		return snapshotCursor{}, false
	}
	horizon, err := strconv.ParseUint(h, 10, 64)
	if err != nil {
		return snapshotCursor{}, false
	}
	after, err := base64.RawURLEncoding.DecodeString(k)
	if err != nil || len(after) == 0 {
		return snapshotCursor{}, false
	}
	return snapshotCursor{horizon: horizon, after: string(after)}, true
}

// querier is a connection, pool or transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// snapshotPage reads up to limit rows after key after and renders those in the view.
// more reports that rows remain after the last one read (last).
func snapshotPage(ctx context.Context, q querier, v *view, after string, limit int) (out []message, last string, more bool, err error) {
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
		val, in, err := v.row(value, "insert")
		if err != nil {
			return nil, "", false, err
		}
		if in {
			out = append(out, message{pk: key, Key: v.t.keyOf(key), Value: val,
				Headers: map[string]any{"operation": "insert", "relation": []string{"public", v.t.name}}})
		}
	}
	return out, last, more, rows.Err()
}

// snapshot reads the first page of the view's rows in one repeatable-read transaction,
// and the horizon from which changes follow the snapshot: every transaction older than
// it is in the rows; younger ones are read as changes, some perhaps again.
func snapshot(ctx context.Context, db streamdb.DB, v *view, limit int) ([]message, snapshotCursor, bool, error) {
	var c snapshotCursor
	tx, err := db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, c, false, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var horizon string
	if err := tx.QueryRow(ctx, sqlHorizon).Scan(&horizon); err != nil {
		return nil, c, false, err
	}
	if c.horizon, err = strconv.ParseUint(horizon, 10, 64); err != nil {
		return nil, c, false, fmt.Errorf("shapes: horizon %q: %w", horizon, err)
	}
	out, last, more, err := snapshotPage(ctx, tx, v, "", limit)
	c.after = last
	return out, c, more, err
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
