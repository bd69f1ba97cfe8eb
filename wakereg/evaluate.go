package wakereg

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wire"
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
// its due debounces and timeouts. It plans without a transaction (reads of the source,
// its registrations, the runs' responses), then commits in one transaction that locks
// the source's cursor row, checks that neither the cursor nor the registrations moved
// since the plan (else it plans again), appends the wakes to the subscribers' streams,
// saves the registrations' state and moves the cursor. A transaction never waits for a
// second connection, so evaluations cannot starve the pool.
func (s *Service) evaluate(ctx context.Context, stream string) (*evaluation, error) {
	for attempt := 0; ; attempt++ {
		p, err := s.plan(ctx, stream)
		if err != nil {
			return nil, err
		}
		if p.absent {
			return p.ev, nil
		}
		done, err := s.commit(ctx, stream, p)
		if err != nil {
			return nil, err
		}
		if done {
			return p.ev, nil
		}
		if attempt >= 20 {
			return nil, fmt.Errorf("wakereg: %s kept changing while it was evaluated", stream)
		}
	}
}

// plan is an evaluation worked out from what was read, and what it read it from.
type plan struct {
	ev          *evaluation
	absent      bool // no registration has the source
	cursor      streamdb.Offset
	fingerprint string
	moveTo      *streamdb.Offset
	targets     []*target
}

// target is a subscriber and the wake events for it.
type target struct {
	url    string
	id     int64 // its main stream (0: gone)
	events [][]byte
}

func (s *Service) plan(ctx context.Context, stream string) (*plan, error) {
	p := &plan{ev: &evaluation{}}
	// one round trip: the cursor row (made if missing), the cursor, the registrations
	b := &pgx.Batch{}
	b.Queue(sqlEnsureSource, stream)
	b.Queue(sqlSourceCursor, stream)
	b.Queue(sqlRegistrationsOf, stream)
	br := s.db.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, err
	}
	err := br.QueryRow().Scan(&p.cursor.Seq, &p.cursor.Pos)
	if errors.Is(err, pgx.ErrNoRows) {
		p.absent = true
		return p, nil
	}
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	if p.ev.regs, p.fingerprint, err = scanRegistrations(rows); err != nil {
		return nil, err
	}
	if err := br.Close(); err != nil {
		return nil, err
	}
	if len(p.ev.regs) == 0 {
		return p, nil // the commit deletes the cursor row
	}
	now := time.Now()
	meta, msgs, err := s.readSource(ctx, stream, p.cursor)
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		p.ev.apply(m, now)
	}
	if len(msgs) > 0 {
		last := msgs[len(msgs)-1].End
		p.ev.more = last.Seq < meta.Tail.Seq
		p.moveTo = &last
	}
	p.ev.dueTimers(now)
	p.targets, err = s.targets(ctx, meta, p.ev, now)
	return p, err
}

func (s *Service) commit(ctx context.Context, stream string, p *plan) (done bool, err error) {
	err = s.store.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		done = false
		var cursor streamdb.Offset
		b := &pgx.Batch{}
		b.Queue(sqlLockSource, stream)
		b.Queue(sqlRegistrationsOf, stream)
		br := tx.Pipeline(ctx, b)
		err := br.QueryRow().Scan(&cursor.Seq, &cursor.Pos)
		if errors.Is(err, pgx.ErrNoRows) {
			_ = br.Close()
			return nil // deleted since: plan again
		}
		if err != nil {
			_ = br.Close()
			return err
		}
		rows, err := br.Query()
		if err != nil {
			_ = br.Close()
			return err
		}
		_, fingerprint, err := scanRegistrations(rows)
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		if cursor != p.cursor {
			return nil // another evaluation moved it: plan again
		}
		if fingerprint != p.fingerprint {
			return nil // registrations changed: plan again
		}
		done = true
		if len(p.ev.regs) == 0 {
			tx.ExecLater(sqlDeleteSource, stream)
			return nil
		}
		if err := s.deliver(ctx, tx, p); err != nil {
			return err
		}
		if p.moveTo != nil {
			tx.ExecLater(sqlMoveCursor, stream, p.moveTo.Seq, p.moveTo.Pos)
		}
		p.ev.save(tx)
		return nil
	})
	return done, err
}

// scanRegistrations reads the registrations of a source, and a fingerprint of them (of
// every column an evaluation reads or writes).
func scanRegistrations(rows pgx.Rows) ([]*regState, string, error) {
	defer rows.Close()
	var out []*regState
	var fp strings.Builder
	for rows.Next() {
		r := &regState{}
		var cond string
		var timeoutMs int
		var buffered *string
		if err := rows.Scan(&r.id, &r.subscriber, &r.source, &cond, &r.debounceMs, &timeoutMs, &r.includeResponse,
			&r.oneShot, &r.fromSeq, &r.timeoutAt, &r.timeoutConsumed, &buffered, &r.debStatus, &r.debKey, &r.debDue); err != nil {
			return nil, "", err
		}
		fmt.Fprintf(&fp, "%d|%s|%s|%s|%d|%d|%t|%t|%d|%v|%t|%v|%s|%s|%v\n", r.id, r.subscriber, r.source, cond, r.debounceMs,
			timeoutMs, r.includeResponse, r.oneShot, r.fromSeq, fmtTime(r.timeoutAt), r.timeoutConsumed, deref(buffered),
			r.debStatus, r.debKey, fmtTime(r.debDue))
		r.cond = parseStoredCondition([]byte(cond))
		if buffered != nil {
			_ = json.Unmarshal([]byte(*buffered), &r.buffered)
		}
		out = append(out, r)
	}
	return out, fp.String(), rows.Err()
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func deref(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
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

// targets renders the evaluation's wakes, grouped by subscriber in stream id order (the
// order group-commit lanes lock streams in).
func (s *Service) targets(ctx context.Context, source *streamdb.Meta, ev *evaluation, now time.Time) ([]*target, error) {
	byURL := map[string]*target{}
	var order []*target
	for i := range ev.deliveries {
		d := &ev.deliveries[i]
		event, err := s.wakeEvent(ctx, source, d, now)
		if err != nil {
			return nil, err
		}
		t := byURL[d.reg.subscriber]
		if t == nil {
			t = &target{url: d.reg.subscriber}
			id, err := s.store.Identify(ctx, entitypath.Main(t.url))
			if err != nil && !errors.Is(err, streamdb.ErrNotFound) && !errors.Is(err, streamdb.ErrGone) {
				return nil, err
			}
			t.id = id.ID
			byURL[t.url] = t
			order = append(order, t)
		}
		t.events = append(t.events, event)
	}
	slices.SortFunc(order, func(a, b *target) int { return cmp.Compare(a.id, b.id) })
	return order, nil
}

// deliver appends the planned wakes. A subscriber whose stream has ended loses its
// registrations.
func (s *Service) deliver(ctx context.Context, tx *streamdb.Tx, p *plan) error {
	for _, t := range p.targets {
		if t.id == 0 {
			s.dropSubscriber(tx, p.ev, t.url)
			continue
		}
		_, err := tx.Append(ctx, &streamdb.AppendRequest{Path: entitypath.Main(t.url), Messages: t.events, StreamID: t.id})
		var closed *streamdb.ClosedError
		switch {
		case err == nil:
		case errors.As(err, &closed), errors.Is(err, streamdb.ErrNotFound), errors.Is(err, streamdb.ErrGone),
			errors.Is(err, streamdb.ErrStreamReplaced):
			s.dropSubscriber(tx, p.ev, t.url)
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
	return wire.Event{Type: "wake", Key: key, Value: v.Bytes(), Operation: wire.OpInsert}.Marshal(), nil
}
