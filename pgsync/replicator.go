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

	r := &reader{s: s, relations: map[uint32]*pglogrepl.RelationMessage{}, skipThrough: applied, confirmed: applied,
		jobs: make(chan job, 1), results: make(chan result, 1)}
	// the applier: one batch at a time, while the reader goes on reading (the next batch
	// grows meanwhile, so batching follows the load and costs no latency when idle)
	applierDone := make(chan struct{})
	go func() {
		defer close(applierDone)
		for j := range r.jobs {
			r.results <- result{end: j.end, err: s.apply(ctx, j.batch, j.end)}
		}
	}()
	defer func() {
		close(r.jobs)
		<-applierDone
	}()
	nextStatus := time.Now()
	var idle time.Time
	for {
		if ctx.Err() != nil {
			return nil
		}
		if err := r.collect(false); err != nil {
			return err
		}
		now := time.Now()
		if !now.Before(nextStatus) {
			if err := s.status(ctx, rc, r.confirmed); err != nil {
				return err
			}
			if err := lease.Ping(ctx); err != nil {
				return fmt.Errorf("pgsync: the lease's connection failed: %w", err)
			}
			if _, err := s.pool.Exec(ctx, sqlDropIdleSources, s.opts.SourceIdle.Seconds()); err != nil {
				return err
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
		if r.busy && len(r.batch) > 0 {
			// a batch waits for the applier: look again soon
			if w := now.Add(pollApplier); w.Before(deadline) {
				deadline = w
			}
		}
		rctx, cancel := context.WithDeadline(ctx, deadline)
		raw, err := rc.ReceiveMessage(rctx)
		cancel()
		if err != nil {
			if pgconn.Timeout(err) && ctx.Err() == nil {
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
				if r.settled() && k.ServerWALEnd > r.confirmed {
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
				if err := r.handle(x.WALData); err != nil {
					return err
				}
			}
		}
	}
}

// pollApplier is how often a waiting batch looks whether the applier is free, and
// maxWaiting the most transactions that wait for it before reading stops.
const (
	pollApplier = time.Millisecond
	maxWaiting  = 10_000
)

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

// reader follows the pgoutput messages of one replication session and hands batches
// of transactions to the applier, one at a time, in order.
type reader struct {
	s           *Service
	relations   map[uint32]*pglogrepl.RelationMessage
	inTx        bool
	cur         txn
	batch       []txn         // transactions with changes, not handed over yet
	last        pglogrepl.LSN // the end of the last transaction seen
	skipThrough pglogrepl.LSN // what pg_sync_state held at the start: transactions ending there or before are in the streams
	confirmed   pglogrepl.LSN // what the slot may be told
	busy        bool          // a batch is being applied
	jobs        chan job
	results     chan result
}

type job struct {
	batch []txn
	end   pglogrepl.LSN
}

type result struct {
	end pglogrepl.LSN
	err error
}

// settled reports whether everything seen is in the streams or had nothing for them.
func (r *reader) settled() bool { return !r.inTx && !r.busy && len(r.batch) == 0 }

func (r *reader) handle(data []byte) error {
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
		if r.cur.end > r.skipThrough && len(r.cur.changes) > 0 {
			r.batch = append(r.batch, r.cur)
		}
		r.cur = txn{}
		if r.settled() && r.last > r.confirmed {
			r.confirmed = r.last
		}
		// a batch that has grown this far waits for the applier (memory stays bounded;
		// Postgres keeps the rest in the slot)
		return r.collect(len(r.batch) >= maxWaiting)
	}
	return nil
}

// collect takes the applier's result if there is one (waiting for it when wait), and
// hands over the waiting batch when the applier is free.
func (r *reader) collect(wait bool) error {
	if r.busy {
		var res result
		if wait {
			res = <-r.results
		} else {
			select {
			case res = <-r.results:
			default:
				return nil
			}
		}
		r.busy = false
		if res.err != nil {
			return res.err
		}
		if res.end > r.confirmed {
			r.confirmed = res.end
		}
		if r.settled() && r.last > r.confirmed {
			r.confirmed = r.last
		}
	}
	if len(r.batch) > 0 && !r.inTx {
		r.jobs <- job{batch: r.batch, end: r.last}
		r.batch, r.busy = nil, true
	}
	return nil
}
