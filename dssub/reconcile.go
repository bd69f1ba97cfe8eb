package dssub

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// settleAfter is how old a stream row must be before the scan for new streams moves past
// it for good: a row with a smaller id may still be in an uncommitted transaction for a
// while after a larger one was committed.
const settleAfter = 2 * time.Minute

const scanBatch = 5000

// reconcile makes up for lost notifications: a commit whose process died before it
// matched the commit, a change another process made while this one's matcher was stale,
// a listener that reconnected. One process at a time (advisory lock) looks for
//   - subscriptions without a wake whose streams have pending work,
//   - streams created since the last look that a pattern matches but that are not linked,
//   - pattern links to streams that no longer exist (removed).
//
// It also reloads the keys, so that a key added to ds_keys is used within an interval.
func (s *Service) reconcile(ctx context.Context) error {
	if kr, err := loadKeys(ctx, s.pool); err == nil {
		s.keys.Store(kr)
	} else {
		s.logs.keys.Log(s.log, zapcore.WarnLevel, "could not reload signing keys", zap.Error(err))
	}
	if err := s.refresh(ctx); err != nil {
		return err
	}
	m := s.matcher.Load()
	var due []string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		due = nil
		var locked bool
		if err := tx.QueryRow(ctx, sqlTryReconcileLock, lockClass, lockReconcile).Scan(&locked); err != nil {
			return err
		}
		if !locked {
			return nil // another process is at it
		}
		idle, err := collect(ctx, tx, sqlSubscriptionsWithStaleLinks,
			streamRoot)
		if err != nil {
			return fmt.Errorf("find pending work: %w", err)
		}
		due = append(due, idle...)
		if _, err := tx.Exec(ctx, sqlDeleteStaleGlobLinks,
			streamRoot); err != nil {
			return fmt.Errorf("remove links of deleted streams: %w", err)
		}
		linked, err := s.scanNewStreams(ctx, tx, m)
		if err != nil {
			return fmt.Errorf("scan new streams: %w", err)
		}
		due = append(due, linked...)
		return nil
	})
	if err != nil {
		return fmt.Errorf("dssub: reconcile: %w", err)
	}
	if len(due) > 0 {
		s.log.Info("reconciliation found subscriptions to advance", zap.Int("subscriptions", len(due)))
		s.enqueue(due...)
	}
	return nil
}

// scanNewStreams matches the streams created since the last scan against the patterns
// and links the unlinked matches at "-1". It returns the subscriptions that got links.
// (The advisory lock makes this process the only scanner; the ds_state row is written
// last, so that subscription changes, which bump its version, wait for it only briefly.)
func (s *Service) scanNewStreams(ctx context.Context, tx pgx.Tx, m *matcher) ([]string, error) {
	var mark int64
	if err := tx.QueryRow(ctx, sqlScannedUpTo).Scan(&mark); err != nil {
		return nil, err
	}
	hasPatterns := len(m.byFirst) > 0 || len(m.wild) > 0
	var subs, paths []string
	var ids []int64
	from, settled := mark, true
	for {
		rows, err := tx.Query(ctx, sqlNewStreamsSince, from, streamRoot, settleAfter, scanBatch)
		if err != nil {
			return nil, err
		}
		n := 0
		for rows.Next() {
			var id int64
			var path string
			var old bool
			if err := rows.Scan(&id, &path, &old); err != nil {
				rows.Close()
				return nil, err
			}
			n++
			from = id
			if settled && old {
				mark = id
			} else {
				settled = false
			}
			rel := strings.TrimPrefix(path, streamRoot)
			if !hasPatterns || rel == "" || reservedPath(rel) {
				continue
			}
			m.match(rel, func(subID string, byPattern bool) {
				if byPattern {
					subs, paths, ids = append(subs, subID), append(paths, rel), append(ids, id)
				}
			})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if n < scanBatch {
			break
		}
	}
	var linked []string
	if len(subs) > 0 {
		var err error
		linked, err = collect(ctx, tx, sqlLinkNewStreams, subs, paths, ids)
		if err != nil {
			return nil, err
		}
	}
	if _, err := tx.Exec(ctx, sqlAdvanceScan, mark); err != nil {
		return nil, err
	}
	return linked, nil
}

func collect(ctx context.Context, tx pgx.Tx, sql string, args ...any) ([]string, error) {
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := ids[:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out, nil
}
