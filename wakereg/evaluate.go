package wakereg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/streamdb"
)

// regState is a registration as an evaluation loads, changes and saves it.
type regState struct {
	id                 int64
	subscriber, source string
	cond               Condition
	debounceMs         int
	includeResponse    bool
	oneShot            bool
	fromSeq            int64
	timeoutAt          *time.Time
	timeoutConsumed    bool
	buffered           []json.RawMessage // debounced changes
	debStatus, debKey  string
	debDue             *time.Time
	dirty, deleted     bool
}

// delivery is one wake event to append for a registration.
type delivery struct {
	reg       *regState
	key       string // the source event's key in the wake's key (its offset, or "timeout")
	changes   []json.RawMessage
	timeout   bool
	runStatus string
	runSeq    int64 // the finished run's message, up to which its response is read
}

// evaluation is what one pass over a source found; it is rebuilt when the transaction
// is retried.
type evaluation struct {
	regs       []*regState
	deliveries []delivery
	more       bool      // messages are left past what this pass read
	nextDue    time.Time // the earliest debounce or timeout still pending (zero: none)
}

// evaluate evaluates the messages appended to the source stream since its cursor, and
// its due debounces and timeouts, in one transaction: the source's cursor row locked,
// the wakes appended to the subscribers' streams, the registrations' state saved, and
// the cursor moved.
func (s *Service) evaluate(ctx context.Context, stream string) (ev *evaluation, err error) {
	err = s.store.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		ev = &evaluation{}
		tx.ExecLater(sqlEnsureSource, stream)
		var cursor streamdb.Offset
		err := tx.QueryRow(ctx, sqlLockSource, stream).Scan(&cursor.Seq, &cursor.Pos)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // no registration has this source
		}
		if err != nil {
			return err
		}
		if ev.regs, err = loadRegistrations(ctx, tx, stream); err != nil {
			return err
		}
		if len(ev.regs) == 0 {
			tx.ExecLater(sqlDeleteSource, stream)
			return nil
		}
		now := time.Now()
		meta, msgs, err := s.readSource(ctx, stream, cursor)
		if err != nil {
			return err
		}
		for _, m := range msgs {
			ev.apply(m, now)
		}
		if len(msgs) > 0 {
			last := msgs[len(msgs)-1].End
			ev.more = last.Seq < meta.Tail.Seq
			tx.ExecLater(sqlMoveCursor, stream, last.Seq, last.Pos)
		}
		ev.dueTimers(now)
		if err := s.deliver(ctx, tx, meta, ev, now); err != nil {
			return err
		}
		ev.save(tx)
		return nil
	})
	return ev, err
}

func loadRegistrations(ctx context.Context, tx *streamdb.Tx, stream string) ([]*regState, error) {
	rows, err := tx.Query(ctx, sqlRegistrationsOf, stream)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*regState
	for rows.Next() {
		r := &regState{}
		var cond string
		var timeoutMs int
		var buffered *string
		if err := rows.Scan(&r.id, &r.subscriber, &r.source, &cond, &r.debounceMs, &timeoutMs, &r.includeResponse,
			&r.oneShot, &r.fromSeq, &r.timeoutAt, &r.timeoutConsumed, &buffered, &r.debStatus, &r.debKey, &r.debDue); err != nil {
			return nil, err
		}
		r.cond = parseStoredCondition([]byte(cond))
		if buffered != nil {
			_ = json.Unmarshal([]byte(*buffered), &r.buffered)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// readSource reads the source's messages after cursor (one read's worth).
func (s *Service) readSource(ctx context.Context, stream string, cursor streamdb.Offset) (*streamdb.Meta, []streamdb.Message, error) {
	meta, err := s.store.Lookup(ctx, stream)
	if errors.Is(err, streamdb.ErrNotFound) || errors.Is(err, streamdb.ErrGone) {
		return nil, nil, nil // nothing to read (yet, or any more); timers still run
	}
	if err != nil {
		return nil, nil, err
	}
	if meta.Tail.Seq <= cursor.Seq {
		return meta, nil, nil
	}
	msgs, err := s.store.Read(ctx, meta, cursor, meta.Tail)
	return meta, msgs, err
}

// apply matches one source message against the registrations.
func (ev *evaluation) apply(m streamdb.Message, now time.Time) {
	var e sourceEvent
	if len(m.Data) == 0 || m.Data[0] != '{' || json.Unmarshal(m.Data, &e) != nil {
		return // not a State Protocol event
	}
	for _, r := range ev.regs {
		if r.deleted || m.End.Seq <= r.fromSeq {
			continue
		}
		ch, status := match(r.cond, &e)
		if ch == nil {
			continue
		}
		raw, _ := json.Marshal(ch)
		if r.timeoutAt != nil {
			r.timeoutAt, r.timeoutConsumed, r.dirty = nil, true, true // a match cancels the timeout
		}
		if r.debounceMs > 0 {
			r.buffered = append(r.buffered, raw)
			if status != "" {
				r.debStatus = status
			}
			r.debKey = m.End.String()
			due := now.Add(time.Duration(r.debounceMs) * time.Millisecond)
			r.debDue, r.dirty = &due, true
		} else {
			ev.deliveries = append(ev.deliveries, delivery{reg: r, key: m.End.String(),
				changes: []json.RawMessage{raw}, runStatus: status, runSeq: m.End.Seq})
		}
		if r.oneShot {
			r.deleted = true
		}
	}
}

// dueTimers delivers due timeouts and debounced changes, and notes the next due time.
func (ev *evaluation) dueTimers(now time.Time) {
	for _, r := range ev.regs {
		if r.deleted {
			continue
		}
		if r.timeoutAt != nil && !r.timeoutConsumed {
			if r.timeoutAt.After(now) {
				ev.noteDue(*r.timeoutAt)
			} else {
				ev.deliveries = append(ev.deliveries, delivery{reg: r, key: "timeout", timeout: true})
				r.timeoutAt, r.timeoutConsumed, r.dirty = nil, true, true
			}
		}
		if r.debDue != nil {
			if r.debDue.After(now) {
				ev.noteDue(*r.debDue)
			} else {
				ev.deliveries = append(ev.deliveries, delivery{reg: r, key: r.debKey, changes: r.buffered,
					runStatus: r.debStatus, runSeq: seqOf(r.debKey)})
				r.buffered, r.debStatus, r.debKey, r.debDue, r.dirty = nil, "", "", nil, true
			}
		}
	}
}

func (ev *evaluation) noteDue(t time.Time) {
	if ev.nextDue.IsZero() || t.Before(ev.nextDue) {
		ev.nextDue = t
	}
}

// seqOf is the seq of an offset string ("<seq>_<pos>").
func seqOf(offset string) int64 {
	o, _, err := streamdb.ParseOffset(offset)
	if err != nil {
		return 0
	}
	return o.Seq
}

// save queues the registrations' new state (sent with the commit).
func (ev *evaluation) save(tx *streamdb.Tx) {
	var gone []int64
	for _, r := range ev.regs {
		switch {
		case r.deleted:
			gone = append(gone, r.id)
		case r.dirty:
			var buffered any
			if len(r.buffered) > 0 {
				b, _ := json.Marshal(r.buffered)
				buffered = string(b)
			}
			tx.ExecLater(sqlSaveState, r.id, r.timeoutAt, r.timeoutConsumed, buffered, r.debStatus, r.debKey, r.debDue)
		}
	}
	if len(gone) > 0 {
		tx.ExecLater(sqlDeleteRegistrations, gone)
	}
}

// deliver appends the evaluation's wakes to their subscribers' streams, in stream id
// order (the order group-commit lanes lock streams in). A subscriber whose stream has
// ended loses its registrations.
func (s *Service) deliver(ctx context.Context, tx *streamdb.Tx, source *streamdb.Meta, ev *evaluation, now time.Time) error {
	if len(ev.deliveries) == 0 {
		return nil
	}
	type target struct {
		url    string
		id     int64
		events [][]byte
	}
	targets := map[string]*target{}
	var order []*target
	for i := range ev.deliveries {
		d := &ev.deliveries[i]
		event, err := s.wakeEvent(ctx, source, d, now)
		if err != nil {
			return err
		}
		t := targets[d.reg.subscriber]
		if t == nil {
			t = &target{url: d.reg.subscriber}
			id, err := s.store.Identify(ctx, entitypath.Main(t.url))
			if err != nil && !errors.Is(err, streamdb.ErrNotFound) && !errors.Is(err, streamdb.ErrGone) {
				return err
			}
			t.id = id.ID
			targets[t.url] = t
			order = append(order, t)
		}
		t.events = append(t.events, event)
	}
	slices.SortFunc(order, func(a, b *target) int { return int(a.id - b.id) })
	for _, t := range order {
		if t.id == 0 {
			s.dropSubscriber(tx, ev, t.url)
			continue
		}
		_, err := tx.Append(ctx, &streamdb.AppendRequest{Path: entitypath.Main(t.url), Messages: t.events, StreamID: t.id})
		var closed *streamdb.ClosedError
		switch {
		case err == nil:
		case errors.As(err, &closed), errors.Is(err, streamdb.ErrNotFound), errors.Is(err, streamdb.ErrGone),
			errors.Is(err, streamdb.ErrStreamReplaced):
			s.dropSubscriber(tx, ev, t.url)
		default:
			return fmt.Errorf("wakereg: wake %s: %w", t.url, err)
		}
	}
	return nil
}

// dropSubscriber removes the registrations of a subscriber whose stream ended.
func (s *Service) dropSubscriber(tx *streamdb.Tx, ev *evaluation, url string) {
	for _, r := range ev.regs {
		if r.subscriber == url {
			r.deleted = true
		}
	}
	tx.ExecLater(sqlDeleteSubscriber, url)
}

// wakeEvent renders a delivery as the `wake` event Electric's runtime reads:
// {"type":"wake","key":"wake-<id>-<source key>","value":{timestamp, source, timeout,
// changes, finished_child?},"headers":{"operation":"insert"}}.
func (s *Service) wakeEvent(ctx context.Context, source *streamdb.Meta, d *delivery, now time.Time) ([]byte, error) {
	var v rawjson.Object
	v.Time("timestamp", now).String("source", d.reg.source).Bool("timeout", d.timeout)
	changes := d.changes
	if changes == nil {
		changes = []json.RawMessage{}
	}
	b, _ := json.Marshal(changes)
	v.Raw("changes", b)
	if d.runStatus != "" {
		fc, err := s.finishedChild(ctx, source, d)
		if err != nil {
			return nil, err
		}
		if fc != nil {
			v.Raw("finished_child", fc)
		}
	}
	key := "wake-" + strconv.FormatInt(d.reg.id, 10) + "-" + d.key
	return streamdb.Event{Type: "wake", Key: key, Value: v.Bytes(), Operation: streamdb.OpInsert}.Marshal(), nil
}
