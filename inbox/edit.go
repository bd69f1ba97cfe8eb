package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wire"
)

// Statuses an inbox message can be patched to.
const (
	StatusPending   = "pending"
	StatusProcessed = "processed"
	StatusCancelled = "cancelled"
)

// ErrMessageNotFound: no inbox message with that key (or it was deleted).
var ErrMessageNotFound = errors.New("inbox message not found")

// Patch is an edit of an inbox message (PATCH .../inbox/:messageKey). Nil fields are left
// alone; the event carries only the fields set, since StreamDB merges updates shallowly.
// The payload is not validated (as in Electric Agents: the UI edits a queued message's
// text this way).
type Patch struct {
	Payload  json.RawMessage
	Position *string
	Mode     *string
	Status   *string
}

// Empty reports a patch that changes nothing.
func (p *Patch) Empty() bool {
	return p.Payload == nil && p.Position == nil && p.Mode == nil && p.Status == nil
}

// PatchMessage appends an inbox update event for the message key of e and returns its
// txid. A paused message patched to another mode is released to the handler; one
// patched to cancelled is withdrawn. Errors: ErrMessageNotFound, entity.ErrNotRunning.
func (s *Sender) PatchMessage(ctx context.Context, e *entity.Entity, key string, p *Patch) (string, error) {
	var v rawjson.Object
	if p.Payload != nil {
		v.Raw("payload", p.Payload)
	}
	if p.Position != nil {
		v.String("position", *p.Position)
	}
	if p.Mode != nil {
		v.String("mode", *p.Mode)
	}
	if p.Status != nil {
		v.String("status", *p.Status)
		if *p.Status == StatusProcessed {
			v.Time("processed_at", s.now())
		}
	}
	return s.appendEdit(ctx, e, key, wire.OpUpdate, v.Bytes())
}

// DeleteMessage appends an inbox delete event for the message key of e (a held message
// is withdrawn) and returns its txid.
func (s *Sender) DeleteMessage(ctx context.Context, e *entity.Entity, key string) (string, error) {
	return s.appendEdit(ctx, e, key, wire.OpDelete, nil)
}

func (s *Sender) appendEdit(ctx context.Context, e *entity.Entity, key, op string, value []byte) (string, error) {
	if err := s.requireMessage(ctx, e, key); err != nil {
		return "", err
	}
	txid := uuid.NewString()
	ev := wire.Event{Type: wire.InboxEventType, Key: key, Value: value, Operation: op, Txid: txid, Timestamp: time.Now()}.Marshal()
	_, err := s.streams.Append(ctx, entity.SendTo(e.URL, ev))
	var closed *streamdb.ClosedError
	if errors.As(err, &closed) || errors.Is(err, entity.ErrNotRunning) {
		return "", entity.ErrNotRunning
	}
	if err != nil {
		return "", err
	}
	return txid, nil
}

// requireMessage finds the newest inbox event for key in e's stream and refuses when
// there is none or it deleted the message. It matches the canonical start of the events
// entityd writes for that key ({"type":"inbox","key":<key>,...), by bytes: no JSON is
// parsed in Postgres (jsonb would refuse a payload's \u0000), and a lookup costs one
// prefix comparison per message.
func (s *Sender) requireMessage(ctx context.Context, e *entity.Entity, key string) error {
	data, ok, err := s.streams.LastEvent(ctx, e.StreamID, wire.InboxEventType, key)
	if err != nil {
		return err
	}
	if !ok {
		return ErrMessageNotFound
	}
	var ev struct {
		Headers struct {
			Operation string `json:"operation"`
		} `json:"headers"`
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return fmt.Errorf("inbox: stored event for %q: %w", key, err)
	}
	if ev.Headers.Operation == wire.OpDelete {
		return ErrMessageNotFound
	}
	return nil
}
