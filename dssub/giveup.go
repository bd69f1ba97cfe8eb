package dssub

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/entityd/entityd/internal/metrics"
	"github.com/entityd/entityd/internal/textpolicy"
	"github.com/entityd/entityd/streamdb"
)

// A handler failure must never wedge a stream. The Durable Streams protocol retries a
// wake for ever; for the streams a GiveUpRule applies to (Electric's entities, whose
// handlers run the poison-message rule in process too), a wake that fails — the webhook
// answered an error or nothing, the handler's lease lapsed, or its done left the work it
// was given unacknowledged — counts against its primary stream, the next wake waits a
// backoff, and after Attempts failures in a row what the wake listed of that stream is
// set aside: acknowledged, recorded (SetAside, a metric, the subscription's last_error,
// a log line), so that later work of the stream is handled. Any acknowledgement that
// moves the stream's cursor starts the count again.

var (
	sqlFirstUnackedListed = queries.Get("FirstUnackedListed")
	sqlNoteWakeFailure    = queries.Get("NoteWakeFailure")
	sqlSetAsideListed     = queries.Get("SetAsideListed")
)

// GiveUpRule is when dssub stops retrying a stream's work (see above).
type GiveUpRule struct {
	// Attempts is how many failed wakes in a row a stream's work gets (0: retried for
	// ever, as the protocol has it).
	Attempts int
	// Applies reports whether the rule applies to the stream at path ("/<path>").
	Applies func(path string) bool
	// SetAside, when set, records work given up on, in the transaction that does it.
	SetAside func(ctx context.Context, tx *streamdb.Tx, w SetAside) error
}

// SetAside is the work of one stream given up on: the messages after From up to To.
type SetAside struct {
	Stream, From, To string
	Attempts         int
	Reason           string
}

// failedWake counts a failure of sb's current wake against primary (relative; "" when
// not known: the first listed stream whose work is unacknowledged) when the give-up rule
// applies to it. It returns when the next wake may start (zero: at once), and whether
// the stream's work was set aside.
//
// links, when read with the wake's snapshot (lockManyWithLinks), spare the statements of
// a wake whose primary stream's work is acknowledged: the common end of a wake.
func (s *Service) failedWake(ctx context.Context, tx *streamdb.Tx, sb *sub, links []*link, primary, reason string) (time.Time, bool, error) {
	rule := s.opts.GiveUp
	if rule.Attempts <= 0 || rule.Applies == nil {
		return time.Time{}, false, nil
	}
	if primary != "" {
		for _, l := range links {
			if l.Path == primary && l.Listed != nil && !l.Acked.less(*l.Listed) {
				return time.Time{}, false, nil
			}
		}
	}
	if primary == "" {
		err := tx.QueryRow(ctx, sqlFirstUnackedListed, sb.ID).Scan(&primary)
		if errors.Is(err, pgx.ErrNoRows) {
			return time.Time{}, false, nil
		}
		if err != nil {
			return time.Time{}, false, err
		}
	}
	if !rule.Applies(streamRoot + primary) {
		return time.Time{}, false, nil
	}
	var failures int
	var acked, listed cursor
	err := tx.QueryRow(ctx, sqlNoteWakeFailure, sb.ID, primary).Scan(&failures, &acked.Seq, &acked.Pos, &listed.Seq, &listed.Pos)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil // acknowledged after all: no failure
	}
	if err != nil {
		return time.Time{}, false, err
	}
	reason = textpolicy.Sanitize(reason, 500)
	if failures < rule.Attempts {
		delay := s.backoff(failures)
		s.log.Warn("wake failed; its work is retried", zap.String("subscription", sb.ID), zap.String("stream", streamRoot+primary),
			zap.Int("attempt", failures), zap.Int("max_attempts", rule.Attempts), zap.Duration("retry_in", delay), zap.String("reason", reason))
		return sb.now.Add(delay), false, nil
	}
	if _, err := tx.Exec(ctx, sqlSetAsideListed, sb.ID, primary); err != nil {
		return time.Time{}, false, err
	}
	for _, l := range links { // as read: the next wake must not list the work again
		if l.Path == primary && l.Acked.less(listed) {
			l.Acked = listed
		}
	}
	w := SetAside{Stream: streamRoot + primary, From: acked.String(), To: listed.String(), Attempts: failures, Reason: reason}
	if rule.SetAside != nil {
		if err := rule.SetAside(ctx, tx, w); err != nil {
			return time.Time{}, false, err
		}
	}
	metrics.WakesSetAside.Inc()
	sb.LastError = textpolicy.Sanitize("gave up on "+w.Stream+" after "+w.From+" up to "+w.To+" after "+
		strconv.Itoa(failures)+" failed wakes: "+reason, 500)
	s.log.Warn("wake failed too often; its work is set aside", zap.String("subscription", sb.ID), zap.String("stream", w.Stream),
		zap.String("from", w.From), zap.String("to", w.To), zap.Int("attempts", failures), zap.String("reason", reason))
	return time.Time{}, true, nil
}

// retryAfter holds a wakeless subscription's next wake until at (none when at is zero):
// the backoff after a failed wake (startWake waits for it).
func retryAfter(sb *sub, at time.Time) {
	if !at.IsZero() {
		sb.NextAttemptAt, sb.DueAt = &at, &at
	}
}
