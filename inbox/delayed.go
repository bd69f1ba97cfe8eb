package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/metrics"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/streamdb"
)

// MaxDelay bounds afterMs: a delayed send is a reminder, not an archive.
const MaxDelay = 365 * 24 * time.Hour

// delayedBatch is how many due sends one firing transaction carries.
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
	t, err := s.registry.Type(ctx, e.Type)
	if err != nil && !errors.Is(err, entity.ErrTypeNotFound) {
		return err
	}
	fresh, err := s.registry.Get(ctx, e.URL)
	if err != nil {
		return err
	}
	if !entity.AcceptsWrites(fresh.Status) {
		return entity.ErrNotRunning
	}
	if err := s.Validate(fresh, t, req); err != nil {
		return err
	}
	if _, err := s.streams.Pool().Exec(ctx, `INSERT INTO delayed_sends (entity_url, fire_at, request)
		VALUES ($1, now() + make_interval(secs => $2), $3)`, e.URL, delay.Seconds(), string(storedRequest(req))); err != nil {
		return fmt.Errorf("inbox: store delayed send: %w", err)
	}
	select {
	case s.delayedPoke <- struct{}{}:
	default:
	}
	return nil
}

// RunDelayed fires due delayed sends until ctx ends. It sleeps until the next one is
// due (at most a second, so sends stored by other processes fire in time too).
func (s *Sender) RunDelayed(ctx context.Context, log *zap.Logger) {
	for {
		next, err := s.fireDelayed(ctx, log)
		if err != nil && ctx.Err() == nil {
			log.Warn("firing delayed sends failed; retrying", zap.Error(err))
		}
		wait := time.Second
		if next != nil {
			if d := time.Until(*next); d < wait {
				wait = max(d, 5*time.Millisecond)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-s.delayedPoke:
		case <-time.After(wait):
		}
	}
}

// fireDelayed appends every due delayed send and returns when the next one is due.
func (s *Sender) fireDelayed(ctx context.Context, log *zap.Logger) (*time.Time, error) {
	for {
		var resumed []*entity.Entity
		fired := 0
		err := s.streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
			resumed, fired = nil, 0
			rows, err := tx.Query(ctx, `SELECT id, entity_url, request::text FROM delayed_sends
				WHERE completed_at IS NULL AND fire_at <= now()
				ORDER BY fire_at, id LIMIT $1 FOR UPDATE SKIP LOCKED`, delayedBatch)
			if err != nil {
				return err
			}
			type due struct {
				id      int64
				url     string
				request string
			}
			var list []due
			for rows.Next() {
				var d due
				if err := rows.Scan(&d.id, &d.url, &d.request); err != nil {
					rows.Close()
					return err
				}
				list = append(list, d)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			for _, d := range list {
				e, failure, err := s.fireOne(ctx, tx, d.id, d.url, d.request)
				if err != nil {
					return err
				}
				if failure != "" {
					metrics.DelayedDropped.Inc()
					log.Warn("delayed send cannot be delivered; kept in delayed_sends with last_error",
						zap.Int64("id", d.id), zap.String("entity", d.url), zap.String("error", failure))
					_, err = tx.Exec(ctx, `UPDATE delayed_sends SET completed_at = now(), last_error = $2 WHERE id = $1`, d.id, failure)
				} else {
					metrics.DelayedFired.Inc()
					_, err = tx.Exec(ctx, `DELETE FROM delayed_sends WHERE id = $1`, d.id)
				}
				if err != nil {
					return err
				}
				if e != nil {
					resumed = append(resumed, e)
				}
				fired++
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		for _, e := range resumed {
			if err := s.resume(ctx, e); err != nil && ctx.Err() == nil {
				log.Warn("a delayed send reached a paused entity that could not be resumed; SIGCONT resumes it",
					zap.String("entity", e.URL), zap.Error(err))
			}
		}
		if fired < delayedBatch {
			break
		}
	}
	var next *time.Time
	err := s.streams.Pool().QueryRow(ctx, `SELECT min(fire_at) FROM delayed_sends WHERE completed_at IS NULL`).Scan(&next)
	return next, err
}

// fireOne appends one delayed send inside tx. It reports the entity when the send
// resumed it from paused, or why the send can never be delivered (failure); err is for
// failures worth retrying, and aborts the batch.
func (s *Sender) fireOne(ctx context.Context, tx *streamdb.Tx, id int64, url, stored string) (resumed *entity.Entity, failure string, err error) {
	var d delayedRequest
	if err := json.Unmarshal([]byte(stored), &d); err != nil {
		return nil, "stored request is not valid: " + err.Error(), nil
	}
	e, err := s.registry.Get(ctx, url)
	if errors.Is(err, entity.ErrNotFound) {
		return nil, "entity not found", nil
	}
	if err != nil {
		return nil, "", err
	}
	req := &SendRequest{Payload: d.Payload, Type: d.Type, Key: d.Key, Mode: d.Mode, Position: d.Position,
		FromPrincipal: d.FromPrincipal, FromAgent: d.FromAgent, Sender: d.Sender}
	if req.Key == "" {
		req.Key = "scheduled-task-" + strconv.FormatInt(id, 10)
	}
	p := s.Prepare(req)
	res, err := tx.Append(ctx, &streamdb.AppendRequest{
		Path: e.MainStream(), Messages: [][]byte{p.Event}, Dedupe: p.Dedupe, Admission: entity.SendAdmission,
	})
	var closed *streamdb.ClosedError
	switch {
	case errors.As(err, &closed), errors.Is(err, entity.ErrNotRunning), errors.Is(err, streamdb.ErrNotFound):
		return nil, "entity is not accepting writes", nil
	case errors.Is(err, streamdb.ErrDedupeConflict):
		return nil, "key " + strconv.Quote(req.Key) + " was already used for a different message", nil
	case err != nil:
		return nil, "", err
	}
	if !res.Duplicate && res.Note == entity.StatusPaused && p.Mode != ModePaused {
		return e, "", nil
	}
	return nil, "", nil
}
