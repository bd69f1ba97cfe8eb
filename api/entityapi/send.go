package entityapi

import (
	"errors"
	"fmt"
	"net/http"
	neturl "net/url"
	"time"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/jsonbody"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/internal/validation"
	"github.com/entityd/entityd/wire"
)

// Send limits beyond the body size.
const (
	maxSendKeyLength  = 256
	maxPositionLength = 256
	maxURLLength      = 2048
)

// send is POST /_electric/entities/:type/:id/send: validate a message and append it to
// the entity's inbox. 200 {"txid"} is written only after the append committed.
func (s *handlers) send(w http.ResponseWriter, r *http.Request) error {
	e, err := s.knownEntityAt(r)
	if err != nil {
		return err
	}
	b, err := s.kit.ReadJSON(w, r)
	if err != nil {
		return err
	}
	req := &inbox.SendRequest{Payload: b.Raw("payload")}
	req.Type, _ = b.Str("type")
	req.Key, _ = b.Str("key")
	req.Mode, _ = b.Enum("mode", wire.ModeImmediate, wire.ModeQueued, wire.ModePaused, wire.ModeSteer)
	req.Position, _ = b.Str("position")
	b.MaxLen("position", req.Position, maxPositionLength)
	afterMs, hasAfter := b.Number("afterMs")
	if hasAfter && afterMs < 0 {
		b.Details.Add("/afterMs", "must be >= 0")
	}
	req.From, _ = b.Str("from")
	req.FromPrincipal, _ = b.Str("from_principal")
	req.FromAgent, _ = b.Str("from_agent")
	if err := b.Fail(); err != nil {
		return err
	}
	if b.Has("key") && (req.Key == "" || len(req.Key) > maxSendKeyLength) {
		return jsonbody.SchemaMismatch(validation.One("/key", "must be a non-empty string of at most 256 characters"))
	}
	req.Sender = api.Caller(r).URL()
	if req.From != "" && req.From != req.Sender {
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, "Request from must match Electric-Principal")
	}
	if req.FromPrincipal != "" && req.FromPrincipal != req.Sender {
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, "Request from_principal must match Electric-Principal")
	}
	if req.FromAgent != "" {
		if err := s.checkFromAgent(r, req.FromAgent); err != nil {
			return err
		}
	}
	req.MayUpdateIdentity = s.checker.Privileged(api.Caller(r))
	req.EnsureSender = true
	if afterMs > 0 {
		if err := refuseLaterIdentity(e, req.Type); err != nil {
			return err
		}
		return s.sendLater(w, r, e, req, afterMs)
	}
	res, err := s.sender.Send(r.Context(), e, req)
	if err != nil {
		return sendError(err)
	}
	return writeSent(w, res)
}

// writeSent answers a send: Electric's {txid}, plus (an entityd extension) the offset
// of the entity's stream just after the message, from which a client follows what the
// handler writes in reply; a retried send answers the same offset as the first one.
func writeSent(w http.ResponseWriter, res *inbox.SendResult) error {
	var o rawjson.Object
	o.String("txid", res.Txid).String("offset", res.Offset.String())
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(o.Bytes())
	return err
}

// sendLater is a send with afterMs > 0: validated now, appended when due; 204 empty (as
// in Electric Agents: there is no txid until it fires).
func (s *handlers) sendLater(w http.ResponseWriter, r *http.Request, e *entity.Entity, req *inbox.SendRequest, afterMs float64) error {
	if afterMs > float64(inbox.MaxDelay/time.Millisecond) {
		return jsonbody.SchemaMismatch(validation.One("/afterMs",
			fmt.Sprintf("must be at most %d (%s)", inbox.MaxDelay/time.Millisecond, "365 days")))
	}
	delay := time.Duration(afterMs * float64(time.Millisecond))
	if delay <= 0 {
		delay = time.Nanosecond // a fraction of a nanosecond is still "later"
	}
	if err := s.sender.SendLater(r.Context(), e, req, delay); err != nil {
		return sendError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// checkFromAgent accepts from_agent only from a caller holding a write token of that
// agent entity (Authorization: Bearer, or Electric-Claim-Token): its spawn token, or
// the write token of the claim of its current wake (what Electric's runtime sends from
// ctx.send). A claim token is fenced as every claim write is: once the wake ended or a
// later wake was claimed, it is refused. from_agent may be the agent's URL or a full
// URL whose path is the agent's, as the reference reads it.
func (s *handlers) checkFromAgent(r *http.Request, agentURL string) error {
	refuse := httpx.New(http.StatusBadRequest, api.CodeInvalidRequest,
		"Request from_agent must be backed by the write token of that agent entity")
	token := api.WriteToken(r)
	if token == "" {
		return refuse
	}
	if u, err := neturl.Parse(agentURL); err == nil && u.Scheme != "" && u.Host != "" {
		agentURL = u.Path
	}
	agent, err := s.registry.Get(r.Context(), agentURL)
	if errors.Is(err, entity.ErrNotFound) {
		return refuse
	}
	if err != nil {
		return err
	}
	if httpx.EqualTokens(agent.WriteToken, token) {
		return nil
	}
	if s.cfg.ClaimTokens != nil {
		ok, err := s.cfg.ClaimTokens(r.Context(), agent.MainStream(), token)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
	}
	return refuse
}

func sendError(err error) error {
	var unknown *inbox.UnknownMessageTypeError
	var invalid *inbox.InvalidPayloadError
	switch {
	case errors.Is(err, entity.ErrNotRunning):
		return httpx.New(http.StatusConflict, api.CodeNotRunning, "Entity is not accepting writes")
	case errors.Is(err, entity.ErrForkInProgress):
		return forkInProgress()
	case errors.Is(err, inbox.ErrKeyReused):
		return httpx.New(http.StatusConflict, CodeIdempotencyKeyReused,
			"This key was already used for a different message to this entity; use a new key for a new message")
	case errors.As(err, &unknown):
		return httpx.New(http.StatusUnprocessableEntity, CodeUnknownMessageType, unknown.Error())
	case errors.As(err, &invalid):
		return httpx.New(http.StatusUnprocessableEntity, api.CodeSchemaValidationFailed, "Validation failed").WithDetails(invalid.Details)
	case errors.Is(err, inbox.ErrIdentityForbidden):
		// 403 with the reference's code for it
		return httpx.New(http.StatusForbidden, api.CodeUnauthorized, inbox.ErrIdentityForbidden.Error())
	case errors.Is(err, inbox.ErrMissingPayload):
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, inbox.ErrMissingPayload.Error())
	}
	return err
}
