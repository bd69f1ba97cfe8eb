package pgsync

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/metrics"
	"github.com/entityd/entityd/internal/ratelog"
)

// Batching of replicated transactions into one streamdb transaction: as many as arrive
// back to back, up to these bounds.
const (
	maxBatchChanges = 1000
	maxBatchAge     = 20 * time.Millisecond
	// flushWindow is how long the replicator waits for another transaction before it
	// applies what it has.
	flushWindow = time.Millisecond
)

// errIdle ends streaming when no observation has existed for SlotIdle.
var errIdle = errors.New("pgsync: no observations")

// run is the replicator loop: take the lease, stream while holding it, and try again
// every LeaseRetry (or when a registration here pokes it).
func (s *Service) run(ctx context.Context) {
	var failed ratelog.Limiter
	var idleSince time.Time
	for ctx.Err() == nil {
		err := s.holdAndStream(ctx, &idleSince)
		if err != nil && ctx.Err() == nil {
			failed.Log(s.log, zap.WarnLevel, "pgSync replication stopped; retrying", zap.Error(err))
		}
		t := time.NewTimer(s.opts.LeaseRetry)
		select {
		case <-ctx.Done():
		case <-t.C:
		case <-s.poke:
		}
		t.Stop()
	}
}

// holdAndStream takes the lease if it is free and streams until an error, the end of
// ctx, or SlotIdle without observations (then it drops the slot).
func (s *Service) holdAndStream(ctx context.Context, idleSince *time.Time) error {
	// observations nobody registered again for SourceIdle go (the runtime registers on
	// every wake, so only those of entities that no longer run are this old)
	if _, err := s.pool.Exec(ctx, sqlDropIdleSources, s.opts.SourceIdle.Seconds()); err != nil {
		return err
	}
	var n int
	if err := s.pool.QueryRow(ctx, sqlCountSources).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		if idleSince.IsZero() {
			*idleSince = time.Now()
		}
		if time.Since(*idleSince) >= s.opts.SlotIdle {
			return s.dropIdleSlot(ctx)
		}
		return nil
	}
	*idleSince = time.Time{}
	lease, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer lease.Release()
	var ok bool
	if err := lease.QueryRow(ctx, sqlTryLease, s.opts.Slot).Scan(&ok); err != nil || !ok {
		return err
	}
	defer func() {
		unlockCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := lease.Exec(unlockCtx, sqlReleaseLease, s.opts.Slot); err != nil {
			lease.Conn().Close(unlockCtx) // its session ends, and the lock with it
		}
	}()
	var level string
	if err := lease.QueryRow(ctx, sqlWalLevel).Scan(&level); err != nil || level != "logical" {
		return err
	}
	metrics.PgSyncHolding.Set(1)
	defer metrics.PgSyncHolding.Set(0)
	err = s.stream(ctx, lease)
	if errors.Is(err, errIdle) {
		*idleSince = time.Now().Add(-s.opts.SlotIdle)
		return s.dropIdleSlot(ctx)
	}
	return err
}

// ensureSlot makes the slot if it is missing or Postgres invalidated it (a lost slot is
// dropped first: the changes it could no longer keep are gone, which is logged and
// counted). Serialized with dropIdleSlot, so that a registration never finds a slot
// that is dropped under it.
func (s *Service) ensureSlot(ctx context.Context) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, sqlLockPublication, "slot:"+s.opts.Slot); err != nil {
			return err
		}
		var status string
		var retained int64
		var active bool
		err := tx.QueryRow(ctx, sqlSlotInfo, s.opts.Slot).Scan(&status, &retained, &active)
		if err == nil && status != "lost" {
			return nil
		}
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if err == nil { // lost
			s.log.Error("the pgSync replication slot was invalidated by Postgres (max_slot_wal_keep_size): changes committed while no entityd streamed were not delivered; making it again",
				zap.String("slot", s.opts.Slot))
			metrics.PgSyncInvalidations.Inc()
			if _, err := tx.Exec(ctx, sqlDropSlot, s.opts.Slot); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", s.opts.Slot)
		return err
	})
}

// dropIdleSlot drops the slot when there is still no observation, so that it holds no
// WAL while nothing is observed.
func (s *Service) dropIdleSlot(ctx context.Context) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, sqlLockPublication, "slot:"+s.opts.Slot); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, sqlCountSources).Scan(&n); err != nil || n > 0 {
			return err
		}
		var status string
		var retained int64
		var active bool
		err := tx.QueryRow(ctx, sqlSlotInfo, s.opts.Slot).Scan(&status, &retained, &active)
		if errors.Is(err, pgx.ErrNoRows) || err == nil && active {
			metrics.PgSyncRetainedWAL.Set(0)
			return nil
		}
		if err != nil {
			return err
		}
		s.log.Info("no pgSync observation left: dropping the replication slot", zap.String("slot", s.opts.Slot))
		_, err = tx.Exec(ctx, sqlDropSlot, s.opts.Slot)
		metrics.PgSyncRetainedWAL.Set(0)
		return err
	})
}

// replConn opens a replication connection with the pool's settings.
func (s *Service) replConn(ctx context.Context) (*pgconn.PgConn, error) {
	cfg := s.pool.Config().ConnConfig.Config.Copy()
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["replication"] = "database"
	return pgconn.ConnectConfig(ctx, cfg)
}

// txn is a replicated transaction with changes.
type txn struct {
	xid     uint32
	lsn     pglogrepl.LSN // commit LSN
	end     pglogrepl.LSN
	at      time.Time
	changes []*change
}

// stream runs START_REPLICATION on the slot and applies what comes until an error.
func (s *Service) stream(ctx context.Context, lease *pgxpool.Conn) error {
	if err := s.ensureSlot(ctx); err != nil {
		return err
	}
	var appliedText string
	applied := pglogrepl.LSN(0)
	if err := s.pool.QueryRow(ctx, sqlAppliedLSN, s.opts.Slot).Scan(&appliedText); err == nil {
		applied, _ = pglogrepl.ParseLSN(appliedText)
	} else if !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	rc, err := s.replConn(ctx)
	if err != nil {
		return err
	}
	defer rc.Close(context.WithoutCancel(ctx))
	err = pglogrepl.StartReplication(ctx, rc, s.opts.Slot, 0, pglogrepl.StartReplicationOptions{
		PluginArgs: []string{"proto_version '1'", "publication_names '" + s.opts.Publication + "'"}})
	if err != nil {
		return fmt.Errorf("pgsync: start replication: %w", err)
	}
	s.log.Info("streaming pgSync changes", zap.String("slot", s.opts.Slot), zap.String("applied", applied.String()))

	r := &reader{s: s, relations: map[uint32]*pglogrepl.RelationMessage{}, applied: applied, confirmed: applied}
	nextStatus := time.Now()
	var idle time.Time
	for {
		if ctx.Err() != nil {
			return nil
		}
		now := time.Now()
		if !now.Before(nextStatus) {
			if err := r.flush(ctx); err != nil {
				return err
			}
			if err := s.status(ctx, rc, r.confirmed); err != nil {
				return err
			}
			if err := lease.Ping(ctx); err != nil {
				return fmt.Errorf("pgsync: the lease's connection failed: %w", err)
			}
			var n int
			if err := s.pool.QueryRow(ctx, sqlCountSources).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				idle = time.Time{}
			} else if idle.IsZero() {
				idle = now
			} else if now.Sub(idle) >= s.opts.SlotIdle {
				return errIdle
			}
			nextStatus = now.Add(s.opts.StatusInterval)
		}
		deadline := nextStatus
		if len(r.batch) > 0 && !r.inTx {
			if w := now.Add(flushWindow); w.Before(deadline) {
				deadline = w
			}
		}
		rctx, cancel := context.WithDeadline(ctx, deadline)
		raw, err := rc.ReceiveMessage(rctx)
		cancel()
		if err != nil {
			if pgconn.Timeout(err) && ctx.Err() == nil {
				if !r.inTx {
					if err := r.flush(ctx); err != nil {
						return err
					}
				}
				continue
			}
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		switch m := raw.(type) {
		case *pgproto3.ErrorResponse:
			return pgconn.ErrorResponseToPgError(m)
		case *pgproto3.CopyData:
			if len(m.Data) == 0 {
				continue
			}
			switch m.Data[0] {
			case pglogrepl.PrimaryKeepaliveMessageByteID:
				k, err := pglogrepl.ParsePrimaryKeepaliveMessage(m.Data[1:])
				if err != nil {
					return err
				}
				if !r.inTx && len(r.batch) == 0 && k.ServerWALEnd > r.confirmed {
					r.confirmed = k.ServerWALEnd
				}
				if k.ReplyRequested {
					nextStatus = time.Time{}
				}
			case pglogrepl.XLogDataByteID:
				x, err := pglogrepl.ParseXLogData(m.Data[1:])
				if err != nil {
					return err
				}
				if err := r.handle(ctx, x.WALData); err != nil {
					return err
				}
			}
		}
	}
}

// status tells the slot how far the streams hold the changes, and samples the metric.
func (s *Service) status(ctx context.Context, rc *pgconn.PgConn, confirmed pglogrepl.LSN) error {
	if err := pglogrepl.SendStandbyStatusUpdate(ctx, rc, pglogrepl.StandbyStatusUpdate{WALWritePosition: confirmed}); err != nil {
		return err
	}
	var status string
	var retained int64
	var active bool
	if err := s.pool.QueryRow(ctx, sqlSlotInfo, s.opts.Slot).Scan(&status, &retained, &active); err == nil {
		metrics.PgSyncRetainedWAL.Set(float64(retained))
	}
	return nil
}

// reader follows the pgoutput messages of one replication session.
type reader struct {
	s         *Service
	relations map[uint32]*pglogrepl.RelationMessage
	inTx      bool
	cur       txn
	batch     []txn
	changes   int
	started   time.Time
	last      pglogrepl.LSN // the end of the last transaction seen
	applied   pglogrepl.LSN // what pg_sync_state holds: transactions ending there or before are skipped
	confirmed pglogrepl.LSN // what the slot may be told
}

func (r *reader) handle(ctx context.Context, data []byte) error {
	msg, err := pglogrepl.Parse(data)
	if err != nil {
		return fmt.Errorf("pgsync: decode: %w", err)
	}
	switch m := msg.(type) {
	case *pglogrepl.RelationMessage:
		r.relations[m.RelationID] = m
	case *pglogrepl.BeginMessage:
		r.inTx = true
		r.cur = txn{xid: m.Xid, lsn: m.FinalLSN}
	case *pglogrepl.InsertMessage:
		if rel := r.relations[m.RelationID]; rel != nil {
			r.cur.changes = append(r.cur.changes, decodeChange(rel, "insert", m.Tuple, nil, 0))
		}
	case *pglogrepl.UpdateMessage:
		if rel := r.relations[m.RelationID]; rel != nil {
			r.cur.changes = append(r.cur.changes, decodeChange(rel, "update", m.NewTuple, m.OldTuple, m.OldTupleType))
		}
	case *pglogrepl.DeleteMessage:
		if rel := r.relations[m.RelationID]; rel != nil {
			r.cur.changes = append(r.cur.changes, decodeChange(rel, "delete", nil, m.OldTuple, m.OldTupleType))
		}
	case *pglogrepl.TruncateMessage:
		r.s.log.Warn("a TRUNCATE of an observed table is not delivered as row changes")
	case *pglogrepl.CommitMessage:
		r.inTx = false
		r.cur.lsn, r.cur.end, r.cur.at = m.CommitLSN, m.TransactionEndLSN, m.CommitTime
		r.last = m.TransactionEndLSN
		switch {
		case r.cur.end <= r.applied: // in the streams already (sent again after a restart or switch)
		case len(r.cur.changes) > 0:
			if len(r.batch) == 0 {
				r.started = time.Now()
			}
			r.batch = append(r.batch, r.cur)
			r.changes += len(r.cur.changes)
		}
		r.cur = txn{}
		if len(r.batch) == 0 {
			if r.last > r.confirmed {
				r.confirmed = r.last
			}
			return nil
		}
		if r.changes >= maxBatchChanges || time.Since(r.started) >= maxBatchAge {
			return r.flush(ctx)
		}
	}
	return nil
}

// flush applies the batch: its events to the observing sources' streams and its end to
// pg_sync_state, in one transaction; then the slot may be told.
func (r *reader) flush(ctx context.Context) error {
	if len(r.batch) == 0 {
		return nil
	}
	end := r.last
	if err := r.s.apply(ctx, r.batch, end); err != nil {
		return err
	}
	r.batch, r.changes = r.batch[:0], 0
	r.applied, r.confirmed = end, end
	return nil
}
