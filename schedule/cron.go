package schedule

import (
	"context"
	"crypto/sha256"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/lifecycle"
	"github.com/entityd/entityd/internal/ratelog"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wire"
)

// CronTickType is the State Protocol type of a cron stream's events.
const CronTickType = "cron_tick"

const cronBatch = 50

// terminalStatuses are the statuses of entities whose cron schedules no longer count.
var terminalStatuses = func() []string {
	var out []string
	for _, st := range entity.Statuses {
		if st.Terminal() {
			out = append(out, string(st))
		}
	}
	return out
}()

// EnsureCron creates spec's cron stream if it does not exist and makes sure it ticks;
// it returns the stream's path. Ensuring it again changes nothing but the note that it
// is still wanted.
func (s *Service) EnsureCron(ctx context.Context, spec *Spec) (string, error) {
	path := spec.Path()
	next := spec.Next(s.now())
	if next.IsZero() {
		return "", &InvalidError{"expression", "Invalid cron expression: " + strconv.Quote(spec.Expression) + " never fires"}
	}
	_, _, err := s.streams.Create(ctx, path, streamdb.CreateConfig{ContentType: "application/json",
		Access: streamdb.Access{Kind: streamdb.AccessCron},
		CheckExisting: func(m *streamdb.Meta) error {
			if m.Access.Kind != streamdb.AccessCron {
				return errors.New("schedule: a stream that is not a cron stream is at " + path)
			}
			return nil
		}}, nil)
	if err != nil {
		return "", err
	}
	if _, err := s.streams.DB().Exec(ctx, sqlEnsureCronStream, path, spec.Expression, spec.Timezone, next,
		s.streams.Clock().SQL()); err != nil {
		return "", err
	}
	s.pokeCron()
	return path, nil
}

// cronPoll is the longest the cron loop sleeps: streams ensured by other processes
// tick at most this late.
const cronPoll = time.Second

// RunCron fires due cron ticks until ctx ends, sleeping until the next one is due by the
// store's clock (at most cronPoll), or until a stream is ensured here.
func (s *Service) RunCron(ctx context.Context) {
	var failed ratelog.Limiter
	round := func(ctx context.Context) time.Time {
		began := s.now()
		next, err := s.fireDue(ctx)
		if err != nil && ctx.Err() == nil {
			failed.Log(s.log, zap.WarnLevel, "firing cron ticks failed; retrying", zap.Error(err))
		}
		if next == nil {
			return time.Time{}
		}
		// a stream another process is firing (locked, so skipped here) is not looked at
		// again at once
		if soon := began.Add(5 * time.Millisecond); next.Before(soon) {
			return soon
		}
		return *next
	}
	(&lifecycle.Every{Interval: cronPoll, Clock: s.streams.Clock(), RunAtStart: true, Wake: s.poke, RunNext: round}).Until(ctx)
}

// fireDue fires the due cron ticks and returns when the next is due (nil: none).
func (s *Service) fireDue(ctx context.Context) (*time.Time, error) {
	for {
		rows, err := s.streams.DB().Query(ctx, sqlDueCronStreams, cronBatch, s.streams.Clock().SQL())
		if err != nil {
			return nil, err
		}
		paths, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, err
		}
		for _, p := range paths {
			if err := s.tick(ctx, p); err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				s.log.Warn("cron tick could not be fired now; retrying", zap.String("stream", p), zap.Error(err))
			}
		}
		if len(paths) < cronBatch {
			break
		}
	}
	var next *time.Time
	err := s.streams.DB().QueryRow(ctx, sqlNextCronDue).Scan(&next)
	return next, err
}

// tick fires one due cron stream in a transaction of its own: append tick <n> (keyed
// tick-<n>, so it is never appended twice), then move to the next fire time after now
// (ticks missed while no server ran are not made up one by one: the next tick says when
// it fired). A stream nobody wants any more stops instead (ensuring it restarts it).
func (s *Service) tick(ctx context.Context, path string) error {
	return s.streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		var expr, tz string
		var n int64
		var due time.Time
		var wanted bool
		err := tx.QueryRow(ctx, sqlLockCronStream, path, IdleCron.Seconds(), terminalStatuses, s.streams.Clock().SQL()).Scan(&expr, &tz, &n, &due, &wanted)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // another process has it, or fired it already
		}
		if err != nil {
			return err
		}
		if !wanted {
			_, err := tx.Exec(ctx, sqlStopCronStream, path)
			return err
		}
		spec, err := Resolve(expr, tz)
		if err != nil { // a zone the system no longer knows: stop rather than spin
			s.log.Warn("cron stream cannot tick any more; stopped", zap.String("stream", path), zap.Error(err))
			_, err := tx.Exec(ctx, sqlStopCronStream, path)
			return err
		}
		now := s.now().UTC()
		key := "tick-" + strconv.FormatInt(n, 10)
		var v rawjson.Object
		v.String("expression", spec.Expression).String("timezone", spec.Timezone).
			String("firedAt", now.Format("2006-01-02T15:04:05.000Z")).Int("tickNumber", n)
		ev := wire.Event{Type: CronTickType, Key: key, Value: v.Bytes(), Operation: wire.OpInsert, Timestamp: now}.Marshal()
		hash := sha256.Sum256([]byte(path + "\x00" + key))
		_, err = tx.Append(ctx, &streamdb.AppendRequest{Path: path, Messages: [][]byte{ev},
			Dedupe: &streamdb.Dedupe{Key: key, Hash: hash[:]}})
		var closed *streamdb.ClosedError
		if errors.Is(err, streamdb.ErrNotFound) || errors.Is(err, streamdb.ErrGone) || errors.As(err, &closed) {
			_, err := tx.Exec(ctx, sqlDropCronStream, path)
			return err
		}
		if err != nil {
			return err
		}
		next := spec.Next(now)
		if next.IsZero() {
			_, err := tx.Exec(ctx, sqlStopCronStream, path)
			return err
		}
		_, err = tx.Exec(ctx, sqlAdvanceCronStream, path, n+1, next)
		return err
	})
}
