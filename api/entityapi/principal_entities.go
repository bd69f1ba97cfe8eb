package entityapi

import (
	"net/http"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/httpx"
)

// refusePrincipalMutation answers a change of a principal entity that only the server
// makes (kill, signals, tags, slash commands, schedules, forks, attachments): 400
// INVALID_REQUEST, as the reference does, after the route's permission was checked.
// Routes that change an entity call it with the entity their permission was checked on.
func refusePrincipalMutation(e *entity.Entity, action string) error {
	if e.Type != entitypath.PrincipalType {
		return nil
	}
	return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, "Principal entities are built in and cannot be "+action)
}

// refusePrincipalEntity refuses, by the route's type, a mutation of a principal's entity
// that the routes added for Electric's entity surface do not allow (fork, attachments,
// webhook-source subscriptions, pg-sync observations): 400, as the reference answers.
// It runs after admission, so only a caller who may touch the entity learns this.
func refusePrincipalEntity(r *http.Request, what string) error {
	if api.Param(r, "type") != entitypath.PrincipalType {
		return nil
	}
	return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, "Principal entities cannot be "+what)
}

// ensureSenderEntity makes sure the caller has its principal entity, as the reference
// does on every send and spawn: the URL its messages and entities name as their sender
// and creator is an entity. A principal that cannot have one (an id with '/') sends
// without it.
func (s *handlers) ensureSenderEntity(r *http.Request) error {
	p := api.Caller(r)
	if !entity.Materializable(p) {
		return nil
	}
	_, err := s.registry.EnsurePrincipal(r.Context(), p)
	return err
}

// refuseLaterIdentity refuses an update_identity to a principal entity that would be
// sent later (afterMs, a future send): the privilege it needs is the sender's now.
func refuseLaterIdentity(target *entity.Entity, msgType string) error {
	if target.Type != entitypath.PrincipalType || msgType != entity.IdentityUpdateType {
		return nil
	}
	return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, "update_identity is applied at once: it cannot be sent later")
}

// refusePrincipalType answers a change of the built-in principal type (delete, amend).
func refusePrincipalType(name, action string) error {
	if name != entitypath.PrincipalType {
		return nil
	}
	return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, `Entity type "principal" is built in and cannot be `+action)
}
