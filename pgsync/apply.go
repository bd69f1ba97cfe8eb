package pgsync

import (
	"context"
	"errors"
	"slices"

	"github.com/jackc/pglogrepl"

	"github.com/entityd/entityd/internal/metrics"
	"github.com/entityd/entityd/streamdb"
)

// source is an observation as the replicator routes changes to it.
type source struct {
	ref, path, table string
	columns          []string
	replica          string
	start            pglogrepl.LSN
}

// apply appends the batch's changes to the streams of the sources observing their
// tables (those registered before the change committed) and records end as applied,
// in one transaction. A source whose stream is gone is dropped.
func (s *Service) apply(ctx context.Context, batch []txn, end pglogrepl.LSN) error {
	var tables []string
	for _, t := range batch {
		for _, c := range t.changes {
			if k := c.table.Key(); !slices.Contains(tables, k) {
				tables = append(tables, k)
			}
		}
	}
	appended := 0
	err := s.streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		appended = 0
		rows, err := tx.Query(ctx, sqlSourcesOf, tables)
		if err != nil {
			return err
		}
		byTable := map[string][]*source{}
		for rows.Next() {
			src := &source{}
			var start string
			if err := rows.Scan(&src.ref, &src.path, &src.table, &src.columns, &src.replica, &start); err != nil {
				rows.Close()
				return err
			}
			src.start, _ = pglogrepl.ParseLSN(start)
			byTable[src.table] = append(byTable[src.table], src)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		msgs := map[*source][][]byte{}
		var order []*source
		for _, t := range batch {
			for _, c := range t.changes {
				for _, src := range byTable[c.table.Key()] {
					if t.lsn <= src.start {
						continue // committed before the observation was registered
					}
					if _, seen := msgs[src]; !seen {
						order = append(order, src)
					}
					msgs[src] = append(msgs[src], c.event(src, t.lsn, t.xid, t.at))
				}
			}
		}
		for _, src := range order {
			_, err := tx.Append(ctx, &streamdb.AppendRequest{Path: src.path, Messages: msgs[src]})
			var closed *streamdb.ClosedError
			if errors.Is(err, streamdb.ErrNotFound) || errors.Is(err, streamdb.ErrGone) || errors.As(err, &closed) {
				if _, err := tx.Exec(ctx, sqlDeleteSource, src.ref); err != nil {
					return err
				}
				continue
			}
			if err != nil {
				return err
			}
			appended += len(msgs[src])
		}
		tx.ExecLater(sqlSaveAppliedLSN, s.opts.Slot, end.String()) // sent with the commit
		return nil
	})
	if err == nil {
		metrics.PgSyncChanges.Add(float64(appended))
	}
	return err
}
