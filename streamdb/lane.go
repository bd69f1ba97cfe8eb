package streamdb

import (
	"context"
	"errors"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/dberr"
	"github.com/entityd/entityd/internal/metrics"
)

// ErrClosed is returned by Append after Close.
var ErrClosed = errors.New("streamdb: store is closed")

// lane is one group-commit loop. Whatever arrived while its previous transaction was
// committing goes into the next one, so under load each WAL flush carries many appends
// and at low load an append waits for no timer.
type lane struct {
	store *Store
	ch    chan *pending
}

type pending struct {
	req  *AppendRequest
	res  AppendResult
	err  error
	done chan struct{}
}

// Append appends through the group-commit lanes and returns after the transaction that
// carried it committed (or failed). A stream always uses the same lane, so appends to one
// stream are applied in the order they reached the lane.
func (s *Store) Append(ctx context.Context, req *AppendRequest) (res AppendResult, err error) {
	p := &pending{req: req, done: make(chan struct{})}
	l := s.lanes[laneIndex(req.Path, len(s.lanes))]
	// Close closes the lane channels under the write lock, so a send here never races it.
	s.closing.RLock()
	if s.closed {
		s.closing.RUnlock()
		return AppendResult{}, ErrClosed
	}
	select {
	case l.ch <- p:
		s.closing.RUnlock()
	case <-ctx.Done():
		s.closing.RUnlock()
		return AppendResult{}, ctx.Err()
	}
	// Once queued the append will be committed or refused; wait for the verdict even if
	// the caller goes away, so that no caller is told "failed" for a committed append.
	<-p.done
	return p.res, p.err
}

func laneIndex(path string, n int) int {
	if n == 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(path))
	return int(h.Sum32() % uint32(n))
}

func (l *lane) run(ctx context.Context) {
	max := l.store.opts.MaxBatch
	batch := make([]*pending, 0, max)
	for {
		first, ok := <-l.ch
		if !ok {
			return
		}
		batch = append(batch[:0], first)
	drain:
		for len(batch) < max {
			select {
			case p, ok := <-l.ch:
				if !ok {
					break drain
				}
				batch = append(batch, p)
			default:
				break drain
			}
		}
		l.commit(ctx, batch)
		// batch[:0] is reused, but its slots still point at the requests just answered:
		// let their messages go now rather than when a later batch overwrites them
		// (a batch of 8 MiB appends stayed alive while the lane waited for the next).
		clear(batch)
	}
}

// commit runs one transaction for batch and answers every request in it.
func (l *lane) commit(ctx context.Context, batch []*pending) {
	l.commitGroup(ctx, batch)
}

// commitGroup commits group in one transaction. When the database refuses the
// transaction for something one request carried (a value it cannot store, a statement
// of a caller's that fails), the group is split in two halves that are committed one
// after the other, down to the request at fault, which fails alone: its neighbours
// commit and get their answers. The halves keep arrival order, and so per-stream order.
// A failure that is not about the requests (the database is unreachable) fails them all.
func (l *lane) commitGroup(ctx context.Context, group []*pending) {
	s := l.store
	reqs := make([]*AppendRequest, len(group))
	for i, p := range group {
		reqs[i] = p.req
	}
	start := time.Now()
	results, errs, w, err := s.appendWithRetries(ctx, reqs)
	if err != nil && len(group) > 1 && isolatable(ctx, err) {
		metrics.CommitSplits.Inc()
		mid := len(group) / 2
		l.commitGroup(ctx, group[:mid])
		l.commitGroup(ctx, group[mid:])
		return
	}
	if err != nil {
		metrics.CommitFailures.Inc()
		if len(group) == 1 && isolatable(ctx, err) {
			metrics.AppendsRefused.Inc()
			s.failLog.Log(s.log, zap.WarnLevel, "append refused by the database", zap.String("stream", group[0].req.Path), zap.Error(err))
		} else {
			s.failLog.Log(s.log, zap.ErrorLevel, "append transaction failed", zap.Int("appends", len(group)), zap.Error(err))
		}
		for _, p := range group {
			p.err = err
			close(p.done)
		}
		return
	}
	took := time.Since(start)
	metrics.Appends.Add(float64(len(group)))
	metrics.CommitBatch.Observe(float64(len(group)))
	metrics.CommitDuration.Observe(took.Seconds())
	if ce := s.log.Check(zap.DebugLevel, "append batch committed"); ce != nil {
		ce.Write(zap.Int("appends", len(group)), zap.Duration("took", took))
	}
	s.publish(w)
	for i, p := range group {
		p.res, p.err = results[i], errs[i]
		close(p.done)
	}
}

// appendWithRetries runs one append transaction, again after a deadlock or a
// serialization failure (Postgres resolved it by aborting us; nothing was written).
func (s *Store) appendWithRetries(ctx context.Context, reqs []*AppendRequest) ([]AppendResult, []error, *writeSet, error) {
	type outcome struct {
		results []AppendResult
		errs    []error
		w       *writeSet
	}
	o, err := dberr.Retry(func() (outcome, error) {
		results, errs, w, err := s.appendTx(ctx, reqs)
		return outcome{results, errs, w}, err
	})
	return o.results, o.errs, o.w, err
}

// isolatable reports whether a failed transaction failed because of what its requests
// carried (Postgres answered with an error about a statement), as opposed to the
// database being unreachable or the store shutting down, which no split would help.
func isolatable(ctx context.Context, err error) bool {
	if ctx.Err() != nil || dberr.Unavailable(err) {
		return false
	}
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr)
}

func (s *Store) appendTx(ctx context.Context, reqs []*AppendRequest) ([]AppendResult, []error, *writeSet, error) {
	txCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := s.pool.Acquire(txCtx)
	if err != nil {
		return nil, nil, nil, err
	}
	defer conn.Release()
	results, errs, w, err := s.runAppendsWith(txCtx, conn, s.clock.Now(), reqs, true, "BEGIN", "COMMIT")
	if err != nil {
		endTx(txCtx, conn)
		return nil, nil, nil, err
	}
	return results, errs, w, nil
}

// endTx ends a transaction that may be open or failed before conn is reused, and drops
// the connection if even that fails.
func endTx(ctx context.Context, conn *pgxpool.Conn) {
	if _, err := conn.Exec(context.WithoutCancel(ctx), "ROLLBACK"); err != nil {
		conn.Conn().Close(context.WithoutCancel(ctx))
	}
}
