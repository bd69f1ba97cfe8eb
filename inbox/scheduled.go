package inbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wire"
)

// A future_send schedule (PUT …/schedules/:id, scheduleType future_send) is a delayed
// send that belongs to an owner entity under a manifest key ("schedule:<id>"): storing it
// replaces the owner's pending one under that key, and firing it writes the manifest
// entry's status (sent or failed) to the owner's stream in the transaction that appends
// the send, so the status is written exactly when the send is.

// ManifestEventType is the State Protocol type of manifest entries.
const ManifestEventType = "manifest"

// Scheduled names a future_send schedule's owner and manifest entry.
type Scheduled struct {
	Owner       string          // the entity whose schedule it is
	ManifestKey string          // "schedule:<id>"
	Manifest    json.RawMessage // the entry as written when scheduled (status pending)
	CreatedBy   string          // the principal, for the schedules quota
}

// CheckLater validates req for e with the rules and errors of Send (the entity must be
// accepting writes; a key already used for another message is refused now).
func (s *Sender) CheckLater(ctx context.Context, e *entity.Entity, req *SendRequest) error {
	t, err := s.registry.Type(ctx, e.Type)
	if err != nil && !errors.Is(err, entity.ErrTypeNotFound) {
		return err
	}
	fresh, err := s.registry.Get(ctx, e.URL)
	if err != nil {
		return err
	}
	if !fresh.Status.AcceptsWrites() {
		return entity.ErrNotRunning
	}
	if err := s.Validate(fresh, t, req); err != nil {
		return err
	}
	if req.Key != "" {
		hash, used, err := s.streams.DedupeHash(ctx, fresh.StreamID, req.Key)
		switch {
		case err != nil:
			return err
		case used && !bytes.Equal(hash, requestHash(req)):
			return ErrKeyReused
		}
	}
	if s.beforeSend != nil {
		return s.beforeSend(ctx, fresh, t)
	}
	return nil
}

// StoreScheduled stores req (checked with CheckLater) to be sent to target at fireAt as
// sch, inside tx, replacing sch's pending send. Call PokeDelayed after tx commits.
func (s *Sender) StoreScheduled(ctx context.Context, tx *streamdb.Tx, target string, req *SendRequest, fireAt time.Time, sch Scheduled) error {
	if err := s.CancelScheduled(ctx, tx, sch.Owner, sch.ManifestKey); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, sqlInsertScheduled, target, fireAt, string(storedRequest(req)), sch.Owner, sch.ManifestKey,
		string(sch.Manifest), sch.CreatedBy); err != nil {
		return fmt.Errorf("inbox: store scheduled send: %w", err)
	}
	return nil
}

// CancelScheduled drops owner's pending future_send under manifestKey, if any.
func (s *Sender) CancelScheduled(ctx context.Context, tx *streamdb.Tx, owner, manifestKey string) error {
	if _, err := tx.Exec(ctx, sqlCancelScheduled, owner, manifestKey); err != nil {
		return fmt.Errorf("inbox: cancel scheduled send: %w", err)
	}
	return nil
}

// CountScheduledBy is how many pending future_send schedules principal p made, up to limit.
func (s *Sender) CountScheduledBy(ctx context.Context, p string, limit int) (int, error) {
	var n int
	err := s.streams.DB().QueryRow(ctx, sqlCountScheduledBy, p, limit).Scan(&n)
	return n, err
}

// HasScheduled reports whether owner has a pending future_send under manifestKey.
func (s *Sender) HasScheduled(ctx context.Context, owner, manifestKey string) (bool, error) {
	var ok bool
	err := s.streams.DB().QueryRow(ctx, sqlHasScheduled, owner, manifestKey).Scan(&ok)
	return ok, err
}

// PokeDelayed wakes this process's firing loop (a send was stored to fire soon).
func (s *Sender) PokeDelayed() {
	select {
	case s.delayedPoke <- struct{}{}:
	default:
	}
}

// writeScheduledStatus writes the manifest entry of a fired future_send with its
// outcome to the owner's stream, in the firing's transaction. An owner whose stream is
// closed or gone has no entry to update.
func writeScheduledStatus(ctx context.Context, tx *streamdb.Tx, owner, key, manifest, failure string) error {
	entry := map[string]json.RawMessage{}
	if err := json.Unmarshal([]byte(manifest), &entry); err != nil {
		return nil // not ours to repair; the send itself is done
	}
	now := time.Now().UTC()
	stamp, _ := json.Marshal(now.Format("2006-01-02T15:04:05.000Z"))
	delete(entry, "sentAt")
	delete(entry, "failedAt")
	delete(entry, "lastError")
	if failure == "" {
		entry["status"] = json.RawMessage(`"sent"`)
		entry["sentAt"] = stamp
	} else {
		reason, _ := json.Marshal(failure)
		entry["status"] = json.RawMessage(`"failed"`)
		entry["failedAt"] = stamp
		entry["lastError"] = reason
	}
	value, err := json.Marshal(entry)
	if err != nil {
		return err
	}
	ev := wire.Event{Type: ManifestEventType, Key: key, Value: value, Operation: wire.OpUpdate, Timestamp: now}.Marshal()
	_, err = tx.Append(ctx, &streamdb.AppendRequest{Path: entitypath.Main(owner), Messages: [][]byte{ev}})
	var closed *streamdb.ClosedError
	if errors.As(err, &closed) || errors.Is(err, streamdb.ErrNotFound) || errors.Is(err, streamdb.ErrGone) {
		return nil
	}
	return err
}
