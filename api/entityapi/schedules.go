package entityapi

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/authz"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/jsonbody"
	"github.com/entityd/entityd/internal/textpolicy"
	"github.com/entityd/entityd/internal/validation"
	"github.com/entityd/entityd/schedule"
)

// Schedule limits beyond the body size.
const (
	maxScheduleIDLength = 256
	maxScheduleWaitMs   = 365 * 24 * 3600 * 1000 // debounceMs and timeoutMs
)

// putSchedule is PUT /_electric/entities/:type/:id/schedules/:scheduleId: a cron
// schedule or a future_send, stored and written to the entity's manifest → {txid}.
func (s *handlers) putSchedule(w http.ResponseWriter, r *http.Request) error {
	e, id, err := s.scheduleTarget(r)
	if err != nil {
		return err
	}
	b, err := s.kit.ReadJSON(w, r)
	if err != nil {
		return err
	}
	typ, _ := b.Enum("scheduleType", "cron", "future_send")
	if !b.Has("scheduleType") {
		b.Details.Add("/scheduleType", "must have required property 'scheduleType'")
	}
	if !b.Has("payload") {
		b.Details.Add("/payload", "must have required property 'payload'")
	}
	switch typ {
	case "cron":
		return s.putCronSchedule(w, r, e, id, b)
	case "future_send":
		return s.putFutureSend(w, r, e, id, b)
	}
	return b.Fail()
}

func (s *handlers) putCronSchedule(w http.ResponseWriter, r *http.Request, e *entity.Entity, id string, b *jsonbody.Body) error {
	b.Only("scheduleType", "expression", "timezone", "payload", "debounceMs", "timeoutMs")
	expr, ok := b.Text("expression")
	if !ok && !b.Has("expression") {
		b.Details.Add("/expression", "must have required property 'expression'")
	}
	tz, _ := b.Str("timezone")
	debounce := waitMs(b, "debounceMs")
	timeout := waitMs(b, "timeoutMs")
	if err := b.Fail(); err != nil {
		return err
	}
	spec, err := schedule.Resolve(expr, tz)
	if err != nil {
		return scheduleError(err)
	}
	if err := s.quotas.schedule(r.Context(), api.Caller(r), e.URL, id); err != nil {
		return err
	}
	txid, err := s.schedules.UpsertCron(r.Context(), e, schedule.CronRequest{ID: id, Spec: spec, Payload: b.Raw("payload"),
		DebounceMs: debounce, TimeoutMs: timeout, CreatedBy: api.Caller(r).String()})
	if err != nil {
		return scheduleError(err)
	}
	return writeTxid(w, txid)
}

func (s *handlers) putFutureSend(w http.ResponseWriter, r *http.Request, e *entity.Entity, id string, b *jsonbody.Body) error {
	b.Only("scheduleType", "payload", "targetUrl", "fireAt", "messageType", "from")
	fireAtText, ok := b.Str("fireAt")
	if !ok && !b.Has("fireAt") {
		b.Details.Add("/fireAt", "must have required property 'fireAt'")
	}
	targetURL, _ := b.Str("targetUrl")
	b.MaxLen("targetUrl", targetURL, maxURLLength)
	msgType, _ := b.Str("messageType")
	from, _ := b.Str("from")
	if err := b.Fail(); err != nil {
		return err
	}
	sender := api.Caller(r).URL()
	if from != "" && from != sender {
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, "Request from must match Electric-Principal")
	}
	fireAt, err := time.Parse(time.RFC3339Nano, fireAtText)
	if err != nil {
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, "Invalid fireAt timestamp: "+fireAtText)
	}
	if time.Until(fireAt) > inbox.MaxDelay {
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, "fireAt must be within 365 days")
	}
	target := e
	if targetURL != "" && targetURL != e.URL {
		// A schedule sends as its creator: it needs write on the target, as a send would.
		target, err = s.registry.Get(r.Context(), targetURL)
		if errors.Is(err, entity.ErrNotFound) {
			target, err = s.kit.NamedEntity(r, targetURL) // a principal entity not made yet
		}
		if errors.Is(err, entity.ErrNotFound) {
			return httpx.New(http.StatusNotFound, api.CodeNotFound, "Entity not found at "+targetURL)
		} else if err != nil {
			return err
		}
		ok, err := s.checker.Entity(r.Context(), api.Caller(r), target, authz.Write)
		if err != nil {
			return err
		}
		if !ok {
			return httpx.New(http.StatusForbidden, api.CodeForbidden, "Principal is not allowed to write "+target.URL)
		}
	}
	if err := refuseLaterIdentity(target, msgType); err != nil {
		return err
	}
	if err := s.quotas.schedule(r.Context(), api.Caller(r), e.URL, id); err != nil {
		return err
	}
	req := &inbox.SendRequest{Payload: b.Raw("payload"), Type: msgType, Sender: sender}
	txid, err := s.schedules.UpsertFutureSend(r.Context(), e, schedule.FutureSendRequest{ID: id, Target: target, Send: req,
		FireAt: fireAt, MessageType: msgType, CreatedBy: api.Caller(r).String()})
	if err != nil {
		return scheduleError(err)
	}
	return writeTxid(w, txid)
}

// deleteSchedule is DELETE /_electric/entities/:type/:id/schedules/:scheduleId → {txid}.
func (s *handlers) deleteSchedule(w http.ResponseWriter, r *http.Request) error {
	e, id, err := s.scheduleTarget(r)
	if err != nil {
		return err
	}
	txid, err := s.schedules.Delete(r.Context(), e, id)
	if err != nil {
		return scheduleError(err)
	}
	return writeTxid(w, txid)
}

func (s *handlers) scheduleTarget(r *http.Request) (*entity.Entity, string, error) {
	if s.schedules == nil {
		return nil, "", httpx.New(http.StatusServiceUnavailable, api.CodeServiceUnavailable, "Schedules are not served by this server")
	}
	e, err := s.entityAt(r)
	if err != nil {
		return nil, "", err
	}
	if err := refusePrincipalMutation(e, "scheduled"); err != nil {
		return nil, "", err
	}
	id := api.Param(r, "scheduleId")
	if id == "" || len(id) > maxScheduleIDLength || !textpolicy.Valid(id, textpolicy.Name) {
		return nil, "", httpx.New(http.StatusBadRequest, api.CodeInvalidRequest,
			fmt.Sprintf("Schedule ids must be 1-%d bytes of UTF-8 without control characters", maxScheduleIDLength))
	}
	return e, id, nil
}

// waitMs reads an optional non-negative integer number of milliseconds.
func waitMs(b *jsonbody.Body, name string) *int64 {
	f, ok := b.Number(name)
	if !ok {
		return nil
	}
	if f < 0 || f > maxScheduleWaitMs || f != float64(int64(f)) {
		b.Details.Add("/"+name, fmt.Sprintf("must be an integer from 0 to %d", int64(maxScheduleWaitMs)))
		return nil
	}
	n := int64(f)
	return &n
}

func scheduleError(err error) error {
	var invalid *schedule.InvalidError
	if errors.As(err, &invalid) {
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, invalid.Message).
			WithDetails(validation.One("/"+invalid.Field, invalid.Message))
	}
	return sendError(err)
}
