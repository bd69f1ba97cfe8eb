package inbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/internal/validation"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wire"
	"github.com/entityd/entityd/wire/composer"
)

// SendRequest is a message to deliver to an entity's inbox. Payload holds the payload's
// raw JSON exactly as sent (nil when the field was absent).
type SendRequest struct {
	Payload       json.RawMessage
	Type          string
	Key           string
	Mode          string
	Position      string
	From          string // the sender as the request named it (checked by the caller)
	FromPrincipal string
	FromAgent     string
	// Sender is the authenticated principal's URL; it becomes the value's "from" unless
	// FromPrincipal is set.
	Sender string
	// MayUpdateIdentity is set by the caller when the sender is privileged: only such a
	// sender's update_identity message to a principal entity is accepted.
	MayUpdateIdentity bool
	// EnsureSender makes sure the Sender principal has its principal entity once the
	// message is valid, before it is appended (as the reference does on every send).
	EnsureSender bool
}

// Errors of the send rules; the HTTP layer maps them to the reference's codes.
var (
	// ErrMissingPayload: the payload field was absent.
	ErrMissingPayload = errors.New("Missing required field: payload")
	// ErrKeyReused: the idempotency key was used before for a different message.
	ErrKeyReused = errors.New("the key was already used for a different message to this entity")
	// ErrIdentityForbidden: an update_identity message to a principal entity from a
	// sender that is not privileged.
	ErrIdentityForbidden = errors.New("Only system principals can update a principal's identity")
)

// UnknownMessageTypeError: the entity declares inbox schemas, none for this type.
type UnknownMessageTypeError struct{ Type string }

func (e *UnknownMessageTypeError) Error() string { return "Unknown message type: " + e.Type }

// InvalidPayloadError: the payload failed composer_input or JSON Schema validation.
type InvalidPayloadError struct{ Details validation.Details }

func (e *InvalidPayloadError) Error() string { return "Validation failed" }

// Limits bound what a send may carry beyond the HTTP body limit.
type Limits struct {
	Composer composer.Limits
}

// Sender applies the send rules and appends inbox events.
type Sender struct {
	registry *entity.Registry
	streams  *streamdb.Store
	limits   Limits
	now      func() time.Time
	unpaused func(url, entityType string)
	// beforeSend runs before a valid send is appended or stored (Hooks.BeforeSend).
	beforeSend func(ctx context.Context, e *entity.Entity, t *entity.Type) error
	// delayedPoke wakes RunDelayed when a delayed send is stored.
	delayedPoke chan struct{}
}

// Hooks are how the server's other parts hear about sends; given at construction.
type Hooks struct {
	// OnUnpause hears about entities a send moved from paused to idle (their handlers
	// have work again).
	OnUnpause func(url, entityType string)
	// BeforeSend runs for every valid send (immediate or delayed) before it is appended
	// or stored; an error fails the send. t is e's current type (nil when it was
	// deleted). The server links the entity to its type's dispatch targets with it.
	BeforeSend func(ctx context.Context, e *entity.Entity, t *entity.Type) error
}

// NewSender returns a Sender.
func NewSender(registry *entity.Registry, streams *streamdb.Store, limits Limits, hooks Hooks) *Sender {
	return &Sender{registry: registry, streams: streams, limits: limits, now: streams.Clock().Now, delayedPoke: make(chan struct{}, 1),
		unpaused: hooks.OnUnpause, beforeSend: hooks.BeforeSend}
}

// Prepared is a validated message, ready to append.
type Prepared struct {
	Event  []byte
	Txid   string
	Key    string
	Dedupe *streamdb.Dedupe
	Mode   string
}

// Validate checks a message against the rules of spec §1.5: composer_input by its
// built-in validator (the entity's inbox schemas are skipped), other typed messages by
// the effective inbox schema of e (t is the entity's current type, nil if deleted).
// The payload must be present.
func (s *Sender) Validate(e *entity.Entity, t *entity.Type, req *SendRequest) error {
	if req.Type == composer.InputType {
		if d := composer.Validate(req.Payload, s.limits.Composer); d != nil {
			return &InvalidPayloadError{Details: d}
		}
		return nil
	}
	if req.Type != "" {
		schema, declared, err := s.registry.InboxSchema(e, t, req.Type)
		if err != nil {
			return fmt.Errorf("inbox: schema for %s: %w", req.Type, err)
		}
		if declared && schema == nil {
			return &UnknownMessageTypeError{Type: req.Type}
		}
		if schema != nil && req.Payload != nil {
			if d := schema.Validate(req.Payload); d != nil {
				return &InvalidPayloadError{Details: d}
			}
		}
		if isIdentityUpdate(e, req) {
			if !req.MayUpdateIdentity {
				return ErrIdentityForbidden
			}
			if d := checkIdentity(e, req.Payload); d != nil {
				return &InvalidPayloadError{Details: d}
			}
		}
	}
	if req.Payload == nil {
		return ErrMissingPayload
	}
	return nil
}

// Prepare builds the inbox event of a validated request.
func (s *Sender) Prepare(req *SendRequest) *Prepared {
	now := s.now()
	mode := req.Mode
	if mode == "" {
		mode = wire.ModeImmediate
	}
	key := req.Key
	if key == "" {
		key = "msg-in-" + strconv.FormatInt(now.UnixMilli(), 10) + "-" + randomBase36(6)
	}
	txid := uuid.NewString()
	p := &Prepared{Txid: txid, Key: key, Mode: mode}
	if req.Key != "" {
		p.Dedupe = &streamdb.Dedupe{Key: req.Key, Hash: requestHash(req), Ref: txid}
	}
	var v rawjson.Object
	v.Grow(len(req.Payload) + len(req.Sender) + len(req.FromPrincipal) + len(req.FromAgent) + len(req.Position) + 256)
	from := req.Sender
	if req.FromPrincipal != "" {
		from = req.FromPrincipal
	}
	v.String("from", from).Raw("payload", req.Payload).Time("timestamp", now).String("mode", mode)
	if mode == wire.ModeQueued || mode == wire.ModePaused {
		v.String("status", "pending")
		pos := req.Position
		if pos == "" {
			pos = fmt.Sprintf("%016d:a0", now.UnixMilli())
		}
		v.String("position", pos)
	} else {
		v.String("status", "processed").Time("processed_at", now)
		if req.Position != "" {
			v.String("position", req.Position)
		}
	}
	if req.FromPrincipal != "" {
		v.String("from_principal", req.FromPrincipal)
	}
	if req.FromAgent != "" {
		v.String("from_agent", req.FromAgent)
	}
	if req.Type != "" {
		v.String("message_type", req.Type)
	}
	p.Event = wire.Event{Type: wire.InboxEventType, Key: key, Value: v.Bytes(), Operation: wire.OpInsert,
		Txid: txid, Timestamp: now}.Marshal()
	return p
}

// SendResult is the outcome of a send.
type SendResult struct {
	Txid string
	// Duplicate reports a retry of an earlier send with the same key and message: nothing
	// was appended and Txid is the first send's.
	Duplicate bool
	Offset    streamdb.Offset
}

// Send validates req and appends it to e's stream. It returns after the append
// committed. Errors: entity.ErrNotRunning, ErrKeyReused, *UnknownMessageTypeError,
// *InvalidPayloadError, ErrMissingPayload.
func (s *Sender) Send(ctx context.Context, e *entity.Entity, req *SendRequest) (*SendResult, error) {
	t, err := s.registry.Type(ctx, e.Type)
	if err != nil && !errors.Is(err, entity.ErrTypeNotFound) {
		return nil, err
	}
	if err := s.Validate(e, t, req); err != nil {
		// The reference refuses a send to a stopped entity before validating it. We
		// validate first to keep the status read off the hot path, and read it only
		// when we are about to refuse, so the precedence is the same.
		if fresh, gerr := s.registry.Get(ctx, e.URL); gerr == nil && !fresh.Status.AcceptsWrites() {
			return nil, entity.ErrNotRunning
		}
		return nil, err
	}
	if s.beforeSend != nil {
		if err := s.beforeSend(ctx, e, t); err != nil {
			return nil, err
		}
	}
	if err := s.ensureSender(ctx, req); err != nil {
		return nil, err
	}
	p := s.Prepare(req)
	areq := s.appendRequest(e, p)
	if isIdentityUpdate(e, req) {
		// the identity the message carries replaces the entity's, in the same commit
		areq.Messages = append(areq.Messages, entity.IdentityEvent(wire.OpUpdate, identityOf(req.Payload), p.Txid))
	}
	res, err := s.streams.Append(ctx, areq)
	var closed *streamdb.ClosedError
	switch {
	case errors.As(err, &closed), errors.Is(err, entity.ErrNotRunning):
		return nil, entity.ErrNotRunning
	case errors.Is(err, streamdb.ErrDedupeConflict):
		return nil, ErrKeyReused
	case err != nil:
		return nil, err
	}
	if res.Duplicate {
		return &SendResult{Txid: res.DedupeRef, Duplicate: true, Offset: res.DedupeOffset}, nil
	}
	if resumes(res, p) {
		s.resumed(e)
	}
	return &SendResult{Txid: p.Txid, Offset: res.Tail}, nil
}

// appendRequest is the append of a prepared send to e's inbox: refused when the entity no
// longer accepts writes, and resuming a paused entity in the same transaction unless the
// message itself is paused.
func (s *Sender) appendRequest(e *entity.Entity, p *Prepared) *streamdb.AppendRequest {
	req := entity.SendTo(e.URL, p.Event)
	req.Dedupe = p.Dedupe
	if p.Mode != wire.ModePaused {
		req.OnAdmit = entity.UnpauseOnAdmit(e.URL)
	}
	return req
}

// resumes reports whether an append of p moved a paused entity back to idle.
func resumes(res streamdb.AppendResult, p *Prepared) bool {
	return !res.Duplicate && entity.Status(res.Note) == entity.StatusPaused && p.Mode != wire.ModePaused
}

// resumed tells the dispatcher that a send moved e from paused to idle (committed).
func (s *Sender) resumed(e *entity.Entity) {
	if s.unpaused != nil {
		s.unpaused(e.URL, e.Type)
	}
}

// requestHash fingerprints what makes two sends "the same message" for the idempotency
// key: type, mode, position, sender fields and the payload (insignificant whitespace
// ignored, member order kept).
func requestHash(req *SendRequest) []byte {
	h := sha256.New()
	for _, f := range []string{req.Type, req.Mode, req.Position, req.From, req.FromPrincipal, req.FromAgent, req.Sender} {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	var buf bytes.Buffer
	if json.Compact(&buf, req.Payload) == nil {
		h.Write(buf.Bytes())
	} else {
		h.Write(req.Payload)
	}
	return h.Sum(nil)
}

func randomBase36(n int) string {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[rand.IntN(len(digits))]
	}
	return string(b)
}
