package dssub

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/entityd/entityd/internal/clock"
	"github.com/entityd/entityd/streamdb"
)

const (
	typeWebhook  = "webhook"
	typePullWake = "pull-wake"

	phaseDelivering = "delivering"
	phaseOpen       = "open"
	phaseClaimed    = "claimed"

	statusActive = "active"
	statusFailed = "failed"

	// maxWakeStreams caps the streams one wake lists (pending ones first); what does not
	// fit stays pending and makes the next wake.
	maxWakeStreams = 1000
)

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// sub is a ds_subscriptions row.
type sub struct {
	ID, Type, Pattern, WebhookURL, WakeStream, Description string
	LeaseTTLms                                             int64
	ConfigHash                                             []byte
	BaseURL                                                string
	CreatedAt                                              time.Time
	Status                                                 string
	Generation                                             int64
	WakeID, Phase, Holder                                  string
	LeaseUntil, NextAttemptAt, AttemptUntil, DueAt         *time.Time
	RetryCount                                             int
	AttemptOwner, LastError                                string

	now  time.Time // the database's clock when the row was read (a test clock's time in tests)
	read state     // the wake state as read
}

// state is the part of a subscription row a wake changes.
type state struct {
	status, wakeID, phase, holder, attemptOwner, lastError string
	generation                                             int64
	retryCount                                             int
	leaseUntil, nextAttemptAt, attemptUntil, dueAt         time.Time
}

func (s *sub) state() state {
	t := func(p *time.Time) time.Time {
		if p == nil {
			return time.Time{}
		}
		return *p
	}
	return state{status: s.Status, wakeID: s.WakeID, phase: s.Phase, holder: s.Holder, attemptOwner: s.AttemptOwner,
		lastError: s.LastError, generation: s.Generation, retryCount: s.RetryCount, leaseUntil: t(s.LeaseUntil),
		nextAttemptAt: t(s.NextAttemptAt), attemptUntil: t(s.AttemptUntil), dueAt: t(s.DueAt)}
}

// endedWake reports that the wake read was ended and no next one started: work that
// committed while the transaction ran may not have been seen, so the caller looks again
// after the commit.
func (s *sub) endedWake() bool { return s.read.wakeID != "" && s.WakeID == "" }

// busy reports a wake in flight that nothing is due for yet: a commit has nothing to
// start (its work goes into the next wake, which whoever ends this one starts).
func (s *sub) busy() bool {
	after := func(t *time.Time) bool { return t != nil && t.After(s.now) }
	switch {
	case s.WakeID == "":
		return false
	case s.Phase == phaseDelivering:
		return (s.AttemptOwner != "" && after(s.AttemptUntil)) || after(s.NextAttemptAt)
	case s.Phase == phaseClaimed || (s.Phase == phaseOpen && s.Type == typeWebhook):
		return after(s.LeaseUntil)
	default:
		return true // a pull-wake waiting for a claim
	}
}

func (s *sub) leaseTTL() time.Duration { return time.Duration(s.LeaseTTLms) * time.Millisecond }

// scanSub reads the columns of the "subColumns" fragment (queries/store.sql), in order.
// The row's now is the database's clock, unless clk is a test clock: then it is the
// test's time, which every decision made from the row then follows.
func scanSub(row pgx.Row, clk clock.Clock) (*sub, error) {
	s := &sub{}
	err := row.Scan(&s.ID, &s.Type, &s.Pattern, &s.WebhookURL, &s.WakeStream, &s.Description, &s.LeaseTTLms,
		&s.ConfigHash, &s.BaseURL, &s.CreatedAt, &s.Status, &s.Generation, &s.WakeID, &s.Phase, &s.Holder,
		&s.LeaseUntil, &s.NextAttemptAt, &s.AttemptUntil, &s.DueAt, &s.RetryCount, &s.AttemptOwner, &s.LastError, &s.now)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("dssub: read subscription: %w", err)
	}
	if now := clk.SQL(); now != nil {
		s.now = *now
	}
	s.read = s.state()
	return s, nil
}

// lockSub reads and locks a subscription row; nil when there is none.
func lockSub(ctx context.Context, q querier, id string, clk clock.Clock) (*sub, error) {
	return scanSub(q.QueryRow(ctx, sqlLockSub, id), clk)
}

func readSub(ctx context.Context, q querier, id string, clk clock.Clock) (*sub, error) {
	return scanSub(q.QueryRow(ctx, sqlSelectSub, id), clk)
}

// saveSub writes the wake state of s back, when it changed. Like the other writes of a
// wake's transaction it is queued (ExecLater): they reach Postgres together, with the
// next read or at the commit, in one round trip.
func saveSub(tx *streamdb.Tx, s *sub) {
	if s.state() == s.read {
		return
	}
	tx.ExecLater(sqlUpdateWakeState,
		s.ID, s.Status, s.Generation, s.WakeID, s.Phase, s.Holder, s.LeaseUntil, s.NextAttemptAt,
		s.AttemptUntil, s.DueAt, s.RetryCount, s.AttemptOwner, s.LastError)
}

// cursor is an acknowledged position: an offset, or "-1" (before the first message).
type cursor struct{ Seq, Pos int64 }

var beforeFirst = cursor{-1, -1}

func (c cursor) String() string {
	if c.Seq < 0 {
		return "-1"
	}
	return streamdb.Offset{Seq: c.Seq, Pos: c.Pos}.String()
}

func (c cursor) less(d cursor) bool { return c.Seq < d.Seq || (c.Seq == d.Seq && c.Pos < d.Pos) }

func cursorOf(o streamdb.Offset) cursor { return cursor{o.Seq, o.Pos} }

// link is one stream of a subscription with the stream's current state.
type link struct {
	Path           string
	Explicit, Glob bool
	Acked          cursor // effective: "-1" when the stream was re-created since
	StreamID       int64  // 0: no such stream now
	Tail           streamdb.Offset
	// Listed is the tail the current wake listed for the link (its snapshot), when the
	// link was read with it (SelectLinksOf); nil when it lists none or was not read.
	Listed *cursor
}

func (l *link) pending() bool { return l.StreamID != 0 && l.Tail.Seq > max(l.Acked.Seq, 0) }

func (l *link) linkType() string {
	if l.Explicit {
		return "explicit"
	}
	return "glob"
}

// streamInfo is how a stream of a subscription is shown to clients and consumers.
type streamInfo struct {
	Path        string `json:"path"`
	LinkType    string `json:"link_type"`
	AckedOffset string `json:"acked_offset"`
	TailOffset  string `json:"tail_offset"`
	HasPending  bool   `json:"has_pending"`
	// Offset repeats TailOffset in an enriched webhook wake (the field Electric's
	// runtimes read, as the path with its leading "/" there); empty elsewhere.
	Offset string `json:"offset,omitempty"`
}

func (l *link) info() streamInfo {
	return streamInfo{Path: l.Path, LinkType: l.linkType(), AckedOffset: l.Acked.String(),
		TailOffset: l.Tail.String(), HasPending: l.pending()}
}

// loadLinks returns the streams of subscription id, sorted by path. With rebase (inside a
// transaction holding the subscription's lock) links whose stream was re-created are
// first reset to "-1" in the table, so what is acked later refers to the new stream.
func loadLinks(ctx context.Context, q querier, id string, rebase bool) ([]*link, error) {
	rows, err := q.Query(ctx, sqlSelectLinks, id, streamRoot)
	if err != nil {
		return nil, fmt.Errorf("dssub: load links: %w", err)
	}
	links, stale, err := scanLinks(rows)
	if err != nil || !rebase || !stale {
		return links, err
	}
	return links, rebaseLinks(ctx, q, id)
}

// rebaseLinks resets the cursors of links whose stream was created or re-created since
// they were linked. Rare; the read that found them already shows the rebased cursors.
func rebaseLinks(ctx context.Context, q querier, id string) error {
	if _, err := q.Exec(ctx, sqlRebaseLinks, id, streamRoot); err != nil {
		return fmt.Errorf("dssub: rebase links: %w", err)
	}
	return nil
}

// lockWithLinks locks a subscription (lockSQL, by key: its id or its current wake) and
// reads the links of subscription linksOf in the same round trip, rebasing stale ones
// (see loadLinks). The links are read after the lock is taken, so they are what the
// previous holder of the lock committed. links is nil when the locked subscription is
// not linksOf (or none is): the caller then loads them itself, if it needs them.
func lockWithLinks(ctx context.Context, tx *streamdb.Tx, lockSQL, key, linksOf string, clk clock.Clock) (*sub, []*link, error) {
	b := &pgx.Batch{}
	b.Queue(lockSQL, key)
	b.Queue(sqlSelectLinks, linksOf, streamRoot)
	br := tx.Pipeline(ctx, b)
	sb, err := scanSub(br.QueryRow(), clk)
	var links []*link
	var stale bool
	if err == nil {
		var rows pgx.Rows
		if rows, err = br.Query(); err == nil {
			links, stale, err = scanLinks(rows)
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, nil, err
	}
	if sb == nil || sb.ID != linksOf {
		return sb, nil, nil
	}
	if links == nil {
		links = []*link{} // read, and there are none: not "unknown"
	}
	if stale {
		if err := rebaseLinks(ctx, tx, sb.ID); err != nil {
			return nil, nil, err
		}
	}
	return sb, links, nil
}

// scanLinks reads links, and reports whether any is stale: linked to no stream or to an
// earlier stream at its path than the one there now.
func scanLinks(rows pgx.Rows) (out []*link, stale bool, err error) {
	defer rows.Close()
	for rows.Next() {
		l, isStale, err := scanLink(rows, nil)
		if err != nil {
			return nil, false, err
		}
		stale = stale || isStale
		out = append(out, l)
	}
	return out, stale, rows.Err()
}

// scanLink reads one row of SelectLinks, between the columns of lead and trail when the
// query has more (SelectLinksOf: the subscription id before, the wake's snapshot
// after), and reports whether the link is stale; a stale link's cursor reads as "-1"
// when it was linked to an earlier stream.
func scanLink(rows pgx.Rows, lead []any, trail ...any) (*link, bool, error) {
	l := &link{}
	var linkStream *int64
	dest := append(append(lead, &l.Path, &l.Explicit, &l.Glob, &linkStream, &l.Acked.Seq, &l.Acked.Pos,
		&l.StreamID, &l.Tail.Seq, &l.Tail.Pos), trail...)
	if err := rows.Scan(dest...); err != nil {
		return nil, false, err
	}
	stale := false
	if l.StreamID != 0 && (linkStream == nil || *linkStream != l.StreamID) {
		stale = true
		if linkStream != nil {
			l.Acked = beforeFirst
		}
	}
	return l, stale, nil
}

func anyPending(links []*link) bool {
	for _, l := range links {
		if l.pending() {
			return true
		}
	}
	return false
}

// wakeLinks picks the streams a wake lists: pending ones first, at most maxWakeStreams.
func wakeLinks(links []*link) []*link {
	out := make([]*link, 0, min(len(links), maxWakeStreams))
	for _, l := range links {
		if l.pending() && len(out) < maxWakeStreams {
			out = append(out, l)
		}
	}
	for _, l := range links {
		if !l.pending() && len(out) < maxWakeStreams {
			out = append(out, l)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func infos(links []*link) []streamInfo {
	out := make([]streamInfo, len(links))
	for i, l := range links {
		out[i] = l.info()
	}
	return out
}

// snapshot records the tails a wake tells the consumer about (what a synchronous done
// acknowledges), replacing the previous wake's.
func snapshot(tx *streamdb.Tx, id string, links []*link) {
	var paths []string
	var seqs, poss []int64
	for _, l := range links {
		if l.StreamID != 0 {
			paths, seqs, poss = append(paths, l.Path), append(seqs, l.Tail.Seq), append(poss, l.Tail.Pos)
		}
	}
	tx.ExecLater(sqlTakeWakeSnapshot, id, paths, seqs, poss)
}

// ackSnapshot acknowledges what the current wake listed (a receiver's synchronous done);
// cursors only move forward.
func ackSnapshot(tx *streamdb.Tx, id string) { tx.ExecLater(sqlAckSnapshot, id) }

func setAcked(tx *streamdb.Tx, id string, l *link, c cursor) {
	var streamID *int64
	if l.StreamID != 0 {
		streamID = &l.StreamID
	}
	tx.ExecLater(sqlUpdateAcked, id, l.Path, c.Seq, c.Pos, streamID)
}

// bumpVersion tells every process that subscriptions changed.
func bumpVersion(ctx context.Context, q querier) error {
	if _, err := q.Exec(ctx, sqlBumpVersion); err != nil {
		return fmt.Errorf("dssub: bump version: %w", err)
	}
	return nil
}

// linkExplicit links paths to subscription id explicitly, at each stream's tail (a
// stream that does not exist yet is linked at offset zero, so that all of it is pending
// once it appears). Existing links keep their cursor.
func linkExplicit(ctx context.Context, q querier, id string, paths []string) error {
	_, err := q.Exec(ctx, sqlLinkExplicit, id, paths, streamRoot)
	if err != nil {
		return fmt.Errorf("dssub: link streams: %w", err)
	}
	return nil
}
