package wake

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wire"
)

var (
	// ErrFenced means another process claimed the entity: this process's claim is stale
	// and its writes were refused.
	ErrFenced = errors.New("wake: the entity was claimed by another process; this claim is stale")
	// ErrEntityEnded means the entity's stream closed (stopped or killed).
	ErrEntityEnded = errors.New("wake: the entity has ended")
)

// fence is the claim an acknowledgement must still hold.
type fence struct {
	url    string
	holder string
	epoch  int64
}

func (f fence) stream() string { return entitypath.Main(f.url) }

// subject is what fenceAdmission checks for an acknowledgement under this claim.
func (f fence) subject() streamdb.Subject {
	return streamdb.Subject{Key: f.url, Holder: f.holder, Epoch: f.epoch}
}

// fenceAdmission checks, under the entity_wake row's lock and in the same transaction as
// the acknowledgement's appends, that the claim (holder, epoch) still holds; it diverts
// acknowledgements of observed entities to their own transaction, which notifies the
// observers.
var fenceAdmission = &streamdb.Admission{
	SQL: sqlFenceAdmission,
	Judge: func(code string) streamdb.Verdict {
		if code == "fenced" {
			return streamdb.Refused(ErrFenced)
		}
		return streamdb.Diverted()
	},
}

// progress is what an acknowledgement records besides the handler's writes.
type progress struct {
	scanned  int64
	consumed []int64
	held     []wire.HeldOp
	// stop finishes a SIGTERM: the entity becomes stopped and its streams close.
	stop bool
}

func (p progress) statements(url string) []streamdb.Statement {
	consumed := p.consumed
	if consumed == nil {
		consumed = []int64{}
	}
	out := []streamdb.Statement{{SQL: sqlAdvanceScan,
		Args: []any{url, p.scanned, consumed}}}
	for _, op := range p.held {
		if op.Del {
			out = append(out, streamdb.Statement{SQL: sqlDeleteHeld,
				Args: []any{url, op.Key}})
			continue
		}
		out = append(out, streamdb.Statement{SQL: sqlInsertHeld,
			Args: []any{url, op.Key, op.Seq, []byte(op.Value)}})
	}
	return out
}

// acknowledge commits a successful run: its effects, the scan position and the held
// messages, fenced by the claim. Plain runs (own events only) share a group commit with
// every other append; the rest take their own transaction.
func (d *Dispatcher) acknowledge(ctx context.Context, f fence, eff Effects, p progress) error {
	if !eff.Extra() && !p.stop {
		res, err := d.streams.Append(ctx, &streamdb.AppendRequest{
			Path: f.stream(), Messages: eff.Events(), Admission: fenceAdmission, Subject: f.subject(),
			Also: p.statements(f.url),
		})
		if err != nil {
			return ackError(err)
		}
		if !res.Diverted {
			eff.Committed()
			return nil
		}
	}
	err := d.streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		if err := checkFence(ctx, tx, f); err != nil {
			return err
		}
		if events := eff.Events(); len(events) > 0 {
			if _, err := tx.Append(ctx, &streamdb.AppendRequest{Path: f.stream(), Messages: events}); err != nil {
				return err
			}
			if err := notifyObservers(ctx, tx, f.url, events); err != nil {
				return err
			}
		}
		if err := eff.Apply(ctx, tx); err != nil {
			return err
		}
		if p.stop {
			if err := d.finishStop(ctx, tx, f.url); err != nil {
				return err
			}
		}
		return execAll(ctx, tx, p.statements(f.url))
	})
	if err != nil {
		return ackError(err)
	}
	eff.Committed()
	return nil
}

// skip records scan progress without a handler run (events that were not work), so an
// entity released by this process is not picked up again for nothing.
func (d *Dispatcher) skip(ctx context.Context, f fence, p progress) error {
	res, err := d.streams.Append(ctx, &streamdb.AppendRequest{Path: f.stream(), Admission: fenceAdmission,
		Subject: f.subject(), Also: p.statements(f.url)})
	if err == nil && res.Diverted {
		err = d.streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
			if err := checkFence(ctx, tx, f); err != nil {
				return err
			}
			return execAll(ctx, tx, p.statements(f.url))
		})
	}
	return ackError(err)
}

// failure records a failed run: an error event on the entity's stream, and either a
// retry after a backoff or, after the last attempt, the work marked failed and skipped.
// Nothing else the run wrote is kept.
type failure struct {
	it       *item
	err      error
	attempt  int
	max      int
	retryAt  time.Time
	giveUp   bool
	progress progress // for giveUp: past the failed item
}

func (d *Dispatcher) recordFailure(ctx context.Context, f fence, fl failure) error {
	events := wire.FailureEvents(wire.RunFailure{Wake: fl.it.wake, Key: fl.it.key, Seq: fl.it.seq, Offset: fl.it.offset.String(),
		Err: fl.err, Attempt: fl.attempt, MaxAttempts: fl.max, RetryAt: fl.retryAt, GiveUp: fl.giveUp})
	err := d.streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		if err := checkFence(ctx, tx, f); err != nil {
			return err
		}
		if _, err := tx.Append(ctx, &streamdb.AppendRequest{Path: f.stream(), Messages: events}); err != nil {
			return err
		}
		if !fl.giveUp {
			_, err := tx.Exec(ctx, sqlSetRetry, f.url, fl.attempt, fl.retryAt, wire.StorableError(fl.err))
			return err
		}
		if _, err := tx.Exec(ctx, sqlInsertFailure,
			f.url, fl.it.seq, fl.it.wake.Kind(), fl.it.key, fl.attempt, wire.StorableError(fl.err)); err != nil {
			return err
		}
		return execAll(ctx, tx, fl.progress.statements(f.url))
	})
	return ackError(err)
}

func checkFence(ctx context.Context, tx *streamdb.Tx, f fence) error {
	var epoch int64
	var holder *string
	err := tx.QueryRow(ctx, sqlCheckFence, f.url).Scan(&epoch, &holder)
	if err != nil {
		return fmt.Errorf("wake: read claim: %w", err)
	}
	if epoch != f.epoch || holder == nil || *holder != f.holder {
		return ErrFenced
	}
	return nil
}

func execAll(ctx context.Context, tx *streamdb.Tx, stmts []streamdb.Statement) error {
	for _, st := range stmts {
		if _, err := tx.Exec(ctx, st.SQL, st.Args...); err != nil {
			return err
		}
	}
	return nil
}

func ackError(err error) error {
	var closed *streamdb.ClosedError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrFenced):
		return ErrFenced
	case errors.As(err, &closed):
		return ErrEntityEnded
	}
	return err
}

// finishStop completes a graceful stop after the SIGTERM wake (FinishStop).
func (d *Dispatcher) finishStop(ctx context.Context, tx *streamdb.Tx, url string) error {
	return FinishStop(ctx, tx, url)
}

// FinishStop completes a graceful stop inside tx, once the handler's wake that follows
// the SIGTERM is over: a stopping entity becomes stopped, its streams close, and its
// observers hear about it. An entity that is not stopping is left as it is. Remote
// handlers' stops finish here too, on their wake's done.
func FinishStop(ctx context.Context, tx *streamdb.Tx, url string) error {
	stopped, err := entity.FinishStop(ctx, tx, url)
	if err != nil || !stopped {
		return err
	}
	now := time.Now()
	var v rawjson.Object
	v.String("status", string(entity.StatusStopped)).Time("timestamp", now)
	ev := wire.Event{Type: "entity_stopped", Key: "entity-stopped", Value: v.Bytes(), Operation: wire.OpInsert, Timestamp: now}.Marshal()
	if _, err := tx.Append(ctx, &streamdb.AppendRequest{Path: entitypath.Main(url), Messages: [][]byte{ev}, Close: true}); err != nil {
		return err
	}
	if _, err := tx.Append(ctx, &streamdb.AppendRequest{Path: entitypath.Collection(url), Close: true}); err != nil && !errors.Is(err, streamdb.ErrNotFound) {
		return err
	}
	return NotifyEnd(ctx, tx, url, string(entity.StatusStopped))
}
