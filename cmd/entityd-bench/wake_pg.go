package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgreSQL's own counters, read before the load and after the drain (plus -pg-settle,
// so idle backends have flushed their statistics), divided by the messages handled in
// between: transactions, WAL flushes, rows and scans per message, and, when the
// pg_stat_statements extension is installed in the database, calls per statement.

type wakePGSnapshot struct {
	db     map[string]int64
	wal    map[string]int64
	tables map[string]map[string]int64
	stmts  map[string]wakePGStmt // by query text
}

type wakePGStmt struct {
	calls  int64
	rows   int64
	execMs float64
}

// WakePGCounters are the differences, per handled message.
type WakePGCounters struct {
	Messages int `json:"messages"`
	// Database: pg_stat_database of the server's database (transactions include read-only ones).
	Database map[string]float64 `json:"database_per_msg"`
	// WAL: pg_stat_wal (wal_sync is the number of WAL fsyncs).
	WAL map[string]float64 `json:"wal_per_msg"`
	// Tables: pg_stat_user_tables per table (tables with no change left out).
	Tables map[string]map[string]float64 `json:"tables_per_msg"`
	// Statements: pg_stat_statements, the busiest statements by calls.
	Statements []WakePGStatement `json:"statements,omitempty"`
}

// WakePGStatement is one statement's calls per message and mean execution time.
type WakePGStatement struct {
	Query       string  `json:"query"`
	CallsPerMsg float64 `json:"calls_per_msg"`
	RowsPerCall float64 `json:"rows_per_call"`
	MeanMs      float64 `json:"mean_ms"`
	TotalMs     float64 `json:"total_ms"`
}

// wakeAnalyze runs ANALYZE on the database (statistics for every table).
func wakeAnalyze(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, "ANALYZE")
	return err
}

func takeWakePGSnapshot(ctx context.Context, url string) (*wakePGSnapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	s := &wakePGSnapshot{db: map[string]int64{}, wal: map[string]int64{}, tables: map[string]map[string]int64{}, stmts: map[string]wakePGStmt{}}
	row := func(sql string, into map[string]int64, names ...string) error {
		vals := make([]int64, len(names))
		ptrs := make([]any, len(names))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := conn.QueryRow(ctx, sql).Scan(ptrs...); err != nil {
			return err
		}
		for i, n := range names {
			into[n] = vals[i]
		}
		return nil
	}
	if err := row(`SELECT xact_commit, xact_rollback, tup_returned, tup_fetched, tup_inserted, tup_updated, tup_deleted,
			blks_hit, blks_read FROM pg_stat_database WHERE datname = current_database()`, s.db,
		"xact_commit", "xact_rollback", "tup_returned", "tup_fetched", "tup_inserted", "tup_updated", "tup_deleted",
		"blks_hit", "blks_read"); err != nil {
		return nil, fmt.Errorf("pg_stat_database: %w", err)
	}
	if err := row(`SELECT wal_records, wal_fpi, wal_bytes::bigint, wal_write, wal_sync FROM pg_stat_wal`, s.wal,
		"wal_records", "wal_fpi", "wal_bytes", "wal_write", "wal_sync"); err != nil {
		return nil, fmt.Errorf("pg_stat_wal: %w", err)
	}
	rows, err := conn.Query(ctx, `SELECT relname, seq_scan, coalesce(seq_tup_read, 0), coalesce(idx_scan, 0),
			n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del FROM pg_stat_user_tables`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var name string
		v := make([]int64, 7)
		if err := rows.Scan(&name, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6]); err != nil {
			rows.Close()
			return nil, err
		}
		s.tables[name] = map[string]int64{"seq_scan": v[0], "seq_tup_read": v[1], "idx_scan": v[2], "n_tup_ins": v[3],
			"n_tup_upd": v[4], "n_tup_hot_upd": v[5], "n_tup_del": v[6]}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var has bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements')`).Scan(&has); err != nil {
		return nil, err
	}
	if has {
		rows, err := conn.Query(ctx, `SELECT regexp_replace(query, '\s+', ' ', 'g'), sum(calls)::bigint, sum(rows)::bigint, sum(total_exec_time)
			FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) GROUP BY 1`)
		if err != nil {
			return nil, fmt.Errorf("pg_stat_statements: %w", err)
		}
		for rows.Next() {
			var q string
			var st wakePGStmt
			if err := rows.Scan(&q, &st.calls, &st.rows, &st.execMs); err != nil {
				rows.Close()
				return nil, err
			}
			s.stmts[q] = st
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *wakePGSnapshot) sub(a *wakePGSnapshot, msgs int) WakePGCounters {
	c := WakePGCounters{Messages: msgs, Database: map[string]float64{}, WAL: map[string]float64{}, Tables: map[string]map[string]float64{}}
	if msgs <= 0 {
		return c
	}
	per := func(d int64) float64 { return float64(d) / float64(msgs) }
	for k, v := range s.db {
		c.Database[k] = per(v - a.db[k])
	}
	for k, v := range s.wal {
		c.WAL[k] = per(v - a.wal[k])
	}
	for t, m := range s.tables {
		changed := false
		out := map[string]float64{}
		for k, v := range m {
			d := v - a.tables[t][k]
			if d != 0 {
				changed = true
			}
			out[k] = per(d)
		}
		if changed {
			c.Tables[t] = out
		}
	}
	for q, st := range s.stmts {
		b := a.stmts[q]
		calls := st.calls - b.calls
		if calls <= 0 {
			continue
		}
		ps := WakePGStatement{Query: q, CallsPerMsg: per(calls), RowsPerCall: float64(st.rows-b.rows) / float64(calls),
			TotalMs: st.execMs - b.execMs}
		ps.MeanMs = ps.TotalMs / float64(calls)
		if len(ps.Query) > 240 {
			ps.Query = ps.Query[:240] + "…"
		}
		c.Statements = append(c.Statements, ps)
	}
	slices.SortFunc(c.Statements, func(x, y WakePGStatement) int {
		switch {
		case x.CallsPerMsg > y.CallsPerMsg:
			return -1
		case x.CallsPerMsg < y.CallsPerMsg:
			return 1
		}
		return strings.Compare(x.Query, y.Query)
	})
	if len(c.Statements) > 25 {
		c.Statements = c.Statements[:25]
	}
	return c
}

func printWakePGCounters(w io.Writer, p *WakePGCounters) {
	fmt.Fprintf(w, "postgres per message (%d messages): xact_commit %.3f, wal_sync (fsyncs) %.4f, wal_records %.1f, wal_bytes %.0f, tup_fetched %.1f, tup_returned %.1f\n",
		p.Messages, p.Database["xact_commit"], p.WAL["wal_sync"], p.WAL["wal_records"], p.WAL["wal_bytes"],
		p.Database["tup_fetched"], p.Database["tup_returned"])
	names := make([]string, 0, len(p.Tables))
	for t := range p.Tables {
		names = append(names, t)
	}
	slices.Sort(names)
	for _, t := range names {
		m := p.Tables[t]
		fmt.Fprintf(w, "  %-22s seq_scan %.3f (rows %.1f)  idx_scan %.2f  ins %.2f  upd %.2f (hot %.2f)  del %.2f\n", t,
			m["seq_scan"], m["seq_tup_read"], m["idx_scan"], m["n_tup_ins"], m["n_tup_upd"], m["n_tup_hot_upd"], m["n_tup_del"])
	}
	for i, s := range p.Statements {
		if i >= 12 {
			break
		}
		fmt.Fprintf(w, "  %6.3f calls/msg  %7.3f ms  %s\n", s.CallsPerMsg, s.MeanMs, wakeTruncate(s.Query, 110))
	}
}

func wakeTruncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
