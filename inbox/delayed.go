package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/entityd/entityd/internal/dberr"
	"github.com/entityd/entityd/internal/ratelog"
	"github.com/entityd/entityd/internal/textpolicy"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/metrics"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/streamdb"
)

// MaxDelay bounds afterMs: a delayed send is a reminder, not an archive.
const MaxDelay = 365 * 24 * time.Hour

// delayedBatch is how many due sends one pass looks up (each fires in its own transaction).
const delayedBatch = 50

// delayedRequest is a delayed send as stored (see storedRequest).
type delayedRequest struct {
	Payload       json.RawMessage `json:"payload"`
	Type          string          `json:"type,omitempty"`
	Key           string          `json:"key,omitempty"`
	Mode          string          `json:"mode,omitempty"`
	Position      string          `json:"position,omitempty"`
	FromPrincipal string          `json:"from_principal,omitempty"`
	FromAgent     string          `json:"from_agent,omitempty"`
	Sender        string          `json:"sender,omitempty"`
}

// storedRequest is req as delayed_sends keeps it. The payload is written as sent
// (encoding/json would compact it); decoding into json.RawMessage keeps its bytes too.
func storedRequest(req *SendRequest) []byte {
	var o rawjson.Object
	o.Raw("payload", req.Payload)
	for _, f := range []struct{ name, value string }{{"type", req.Type}, {"key", req.Key}, {"mode", req.Mode},
		{"position", req.Position}, {"from_principal", req.FromPrincipal}, {"from_agent", req.FromAgent},
		{"sender", req.Sender}} {
		if f.value != "" {
			o.String(f.name, f.value)
		}
	}
	return o.Bytes()
}

// SendLater validates req now, with the rules and errors of Send (the entity must be
// accepting writes), and stores it to be appended to e's inbox after delay. It returns
// once the delayed send is stored. When it fires it is an ordinary send (a new txid,
// the timestamp of the firing); without a key it gets "scheduled-task-<id>", and a key
// makes it idempotent as for Send.
func (s *Sender) SendLater(ctx context.Context, e *entity.Entity, req *SendRequest, delay time.Duration) error {
	if delay <= 0 || delay > MaxDelay {
		return fmt.Errorf("inbox: delay %s out of range", delay)
	}
	if err := s.CheckLater(ctx, e, req); err != nil {
		return err
	}
	if _, err := s.streams.DB().Exec(ctx, sqlInsertDelayed, e.URL, delay.Seconds(), string(storedRequest(req))); err != nil {
		return fmt.Errorf("inbox: store delayed send: %w", err)
	}
	s.PokeDelayed()
	return nil
}

// RunDelayed fires due delayed sends until ctx ends. It sleeps until the next one is
// due by the database's clock (at most a second, so sends stored by other processes fire
// in time too).
func (s *Sender) RunDelayed(ctx context.Context, log *zap.Logger) {
	var failed ratelog.Limiter // an outage would otherwise log a line a second
	for {
		wait, err := s.fireDelayed(ctx, log, &failed)
		if err != nil && ctx.Err() == nil {
			failed.Log(log, zap.WarnLevel, "firing delayed sends failed; retrying", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-s.delayedPoke:
		case <-time.After(wait):
		}
	}
}

// fireDelayed fires every due delayed send, each in its own transaction (one failing
// row never holds the others back, and a transaction locks one stream), and returns how
// long to sleep.
func (s *Sender) fireDelayed(ctx context.Context, log *zap.Logger, failed *ratelog.Limiter) (time.Duration, error) {
	for {
		rows, err := s.streams.DB().Query(ctx, sqlDueDelayed, delayedBatch)
		if err != nil {
			return time.Second, err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return time.Second, err
		}
		progressed := false
		for _, id := range ids {
			done, err := s.fireDelayedRow(ctx, log, id)
			if err != nil && dberr.Refused(err) {
				// The database refuses this row's append and always will: set it aside
				// with the reason instead of retrying it every second.
				done, err = s.giveUpDelayed(ctx, log, id, err)
			}
			if err != nil {
				if ctx.Err() != nil {
					return 0, ctx.Err()
				}
				failed.Log(log, zap.WarnLevel, "delayed send could not be fired now; retrying", zap.Int64("id", id), zap.Error(err))
				continue
			}
			progressed = progressed || done
		}
		if len(ids) < delayedBatch || !progressed {
			break
		}
	}
	var secs *float64
	err := s.streams.DB().QueryRow(ctx, sqlSecondsToNextDelayed).Scan(&secs)
	wait := time.Second
	if err == nil && secs != nil {
		wait = min(wait, max(time.Duration(*secs*float64(time.Second)), 5*time.Millisecond))
	}
	return wait, err
}

// fireDelayedRow fires one delayed send unless another process has it or fired it
// already: appended and deleted, or kept with last_error when it can never be appended.
func (s *Sender) fireDelayedRow(ctx context.Context, log *zap.Logger, id int64) (done bool, err error) {
	var resumed *entity.Entity
	err = s.streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		done, resumed = false, nil
		var url, request, owner, manifestKey, manifest string
		err := tx.QueryRow(ctx, sqlLockDelayed, id).Scan(&url, &request, &owner, &manifestKey, &manifest)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // taken by another process, or fired already
		}
		if err != nil {
			return err
		}
		e, failure, err := s.fireOne(ctx, tx, id, url, request)
		if err != nil {
			return err
		}
		if owner != "" {
			if err := writeScheduledStatus(ctx, tx, owner, manifestKey, manifest, failure); err != nil {
				return err
			}
		}
		if failure != "" {
			log.Warn("delayed send cannot be delivered; kept in delayed_sends with last_error",
				zap.Int64("id", id), zap.String("entity", url), zap.String("error", failure))
			_, err = tx.Exec(ctx, sqlFailDelayed, id, failure)
		} else {
			_, err = tx.Exec(ctx, sqlDeleteDelayed, id)
		}
		if err != nil {
			return err
		}
		done, resumed = true, e
		if failure != "" {
			metrics.DelayedDropped.Inc()
		} else {
			metrics.DelayedFired.Inc()
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	if resumed != nil {
		s.resumed(resumed)
	}
	return done, nil
}

// giveUpDelayed marks a delayed send the database refuses to append as completed, with the
// refusal as its last_error, so that it stops being retried and can be inspected.
func (s *Sender) giveUpDelayed(ctx context.Context, log *zap.Logger, id int64, refusal error) (bool, error) {
	reason := textpolicy.Sanitize("the database refused the append: "+refusal.Error(), 1000)
	tag, err := s.streams.DB().Exec(ctx, sqlGiveUpDelayed, id, reason)
	if err != nil {
		return false, err
	}
	if tag.RowsAffected() > 0 {
		metrics.DelayedDropped.Inc()
		log.Warn("delayed send cannot be delivered; kept in delayed_sends with last_error",
			zap.Int64("id", id), zap.String("error", reason))
	}
	return true, nil
}

// fireOne appends one delayed send inside tx. It reports the entity when the send
// resumed it from paused, or why the send can never be delivered (failure); err is for
// failures worth retrying. It reads nothing outside tx: the entity's status is checked by
// the append's admission, and its stream is found by its URL.
func (s *Sender) fireOne(ctx context.Context, tx *streamdb.Tx, id int64, url, stored string) (resumed *entity.Entity, failure string, err error) {
	var d delayedRequest
	if err := json.Unmarshal([]byte(stored), &d); err != nil {
		return nil, "stored request is not valid: " + err.Error(), nil
	}
	e := &entity.Entity{URL: url, Type: entityTypeOf(url)}
	req := &SendRequest{Payload: d.Payload, Type: d.Type, Key: d.Key, Mode: d.Mode, Position: d.Position,
		FromPrincipal: d.FromPrincipal, FromAgent: d.FromAgent, Sender: d.Sender}
	if req.Key == "" {
		req.Key = "scheduled-task-" + strconv.FormatInt(id, 10)
	}
	p := s.Prepare(req)
	res, err := tx.Append(ctx, s.appendRequest(e, p))
	var closed *streamdb.ClosedError
	switch {
	case errors.Is(err, streamdb.ErrNotFound), errors.Is(err, streamdb.ErrGone):
		return nil, "entity not found", nil
	case errors.As(err, &closed), errors.Is(err, entity.ErrNotRunning):
		return nil, "entity is not accepting writes", nil
	case errors.Is(err, streamdb.ErrDedupeConflict):
		return nil, "key " + strconv.Quote(req.Key) + " was already used for a different message", nil
	case err != nil:
		return nil, "", err
	}
	if resumes(res, p) {
		return e, "", nil
	}
	return nil, "", nil
}

// entityTypeOf is the type part of an entity URL (/<type>/<id>).
func entityTypeOf(url string) string {
	typ, _, _ := strings.Cut(strings.TrimPrefix(url, "/"), "/")
	return typ
}
