package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wire"
)

// An entity's schedules are manifest entries on its stream, keyed "schedule:<id>", as
// Electric Agents writes them (the runtime's schedule tools read them back): a cron
// schedule names its cron stream (whose ticks wake the entity through the wake
// registration its manifest entry makes), a future_send is a delayed send to a target.

// ManifestKey is the manifest key of schedule id.
func ManifestKey(id string) string { return "schedule:" + id }

// CronRequest is PUT …/schedules/:id with scheduleType cron.
type CronRequest struct {
	ID         string
	Spec       *Spec
	Payload    json.RawMessage
	DebounceMs *int64
	TimeoutMs  *int64
	CreatedBy  string
}

// FutureSendRequest is PUT …/schedules/:id with scheduleType future_send.
type FutureSendRequest struct {
	ID          string
	Target      *entity.Entity
	Send        *inbox.SendRequest // Payload, Type and the sender (From) filled in
	FireAt      time.Time
	MessageType string
	CreatedBy   string
}

// ErrNotRunning: the owner entity's stream is closed (it was killed or stopped).
var ErrNotRunning = entity.ErrNotRunning

// UpsertCron stores e's cron schedule and writes its manifest entry; it returns the
// entry's txid.
func (s *Service) UpsertCron(ctx context.Context, e *entity.Entity, req CronRequest) (string, error) {
	path, err := s.EnsureCron(ctx, req.Spec)
	if err != nil {
		return "", err
	}
	key := ManifestKey(req.ID)
	var wake rawjson.Object
	wake.String("on", "change")
	if req.DebounceMs != nil {
		wake.Int("debounceMs", *req.DebounceMs)
	}
	if req.TimeoutMs != nil {
		wake.Int("timeoutMs", *req.TimeoutMs)
	}
	var v rawjson.Object
	v.String("key", key).String("kind", "schedule").String("id", req.ID).String("scheduleType", "cron").
		String("expression", req.Spec.Expression).String("timezone", req.Spec.Timezone).
		Raw("payload", req.Payload).Raw("wake", wake.Bytes())
	txid := uuid.NewString()
	err = s.streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		if err := s.sender.CancelScheduled(ctx, tx, e.URL, key); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, sqlUpsertCronSchedule, e.URL, req.ID, path, req.CreatedBy); err != nil {
			return err
		}
		return appendManifest(ctx, tx, e.URL, key, wire.OpUpsert, v.Bytes(), txid)
	})
	return txid, err
}

// UpsertFutureSend stores owner's future_send schedule (replacing one with the same id)
// and writes its manifest entry (status pending); it returns the entry's txid. The send
// is checked now as a send to req.Target would be.
func (s *Service) UpsertFutureSend(ctx context.Context, owner *entity.Entity, req FutureSendRequest) (string, error) {
	if err := s.sender.CheckLater(ctx, req.Target, req.Send); err != nil {
		return "", err
	}
	key := ManifestKey(req.ID)
	producerID := "future-send-" + uuid.NewString()
	req.Send.Key = "scheduled-" + producerID
	var v rawjson.Object
	v.String("key", key).String("kind", "schedule").String("id", req.ID).String("scheduleType", "future_send").
		String("fireAt", req.FireAt.UTC().Format("2006-01-02T15:04:05.000Z")).String("targetUrl", req.Target.URL).
		String("senderUrl", req.Send.Sender).Raw("payload", req.Send.Payload).String("producerId", producerID)
	if req.MessageType != "" {
		v.String("messageType", req.MessageType)
	}
	v.String("status", "pending")
	entry := v.Bytes()
	txid := uuid.NewString()
	err := s.streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		if _, err := tx.Exec(ctx, sqlDeleteCronSchedule, owner.URL, req.ID); err != nil {
			return err
		}
		if err := s.sender.StoreScheduled(ctx, tx, req.Target.URL, req.Send, req.FireAt, inbox.Scheduled{
			Owner: owner.URL, ManifestKey: key, Manifest: entry, CreatedBy: req.CreatedBy}); err != nil {
			return err
		}
		return appendManifest(ctx, tx, owner.URL, key, wire.OpUpsert, entry, txid)
	})
	if err != nil {
		return "", err
	}
	s.sender.PokeDelayed()
	return txid, nil
}

// Delete drops e's schedule id (cron or future_send, pending or not) and deletes its
// manifest entry; it returns the txid of the delete.
func (s *Service) Delete(ctx context.Context, e *entity.Entity, id string) (string, error) {
	key := ManifestKey(id)
	txid := uuid.NewString()
	err := s.streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		if err := s.sender.CancelScheduled(ctx, tx, e.URL, key); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, sqlDeleteCronSchedule, e.URL, id); err != nil {
			return err
		}
		return appendManifest(ctx, tx, e.URL, key, wire.OpDelete, nil, txid)
	})
	return txid, err
}

// CountBy is how many schedules principal p made (cron schedules and pending
// future_sends), counted up to limit.
func (s *Service) CountBy(ctx context.Context, p string, limit int) (int, error) {
	var crons int
	if err := s.streams.DB().QueryRow(ctx, sqlCountCronSchedulesBy, p, limit).Scan(&crons); err != nil {
		return 0, err
	}
	sends, err := s.sender.CountScheduledBy(ctx, p, limit)
	return crons + sends, err
}

// Exists reports whether e has schedule id (a cron schedule or a pending future_send):
// replacing one is no new schedule for the quota.
func (s *Service) Exists(ctx context.Context, url, id string) (bool, error) {
	var ok bool
	if err := s.streams.DB().QueryRow(ctx, sqlHasCronSchedule, url, id).Scan(&ok); err != nil || ok {
		return ok, err
	}
	return s.sender.HasScheduled(ctx, url, ManifestKey(id))
}

// appendManifest appends a manifest event to the entity's stream in tx; a closed stream
// is ErrNotRunning.
func appendManifest(ctx context.Context, tx *streamdb.Tx, url, key, op string, value []byte, txid string) error {
	ev := wire.Event{Type: inbox.ManifestEventType, Key: key, Value: value, Operation: op, Txid: txid,
		Timestamp: time.Now().UTC()}.Marshal()
	_, err := tx.Append(ctx, &streamdb.AppendRequest{Path: entitypath.Main(url), Messages: [][]byte{ev}})
	var closed *streamdb.ClosedError
	if errors.As(err, &closed) || errors.Is(err, streamdb.ErrGone) {
		return ErrNotRunning
	}
	return err
}
