package entityapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/authz"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/jsonbody"
	"github.com/entityd/entityd/internal/principal"
	"github.com/entityd/entityd/internal/validation"
)

const maxInstanceIDLength = 256

// maxCreatedByLength bounds the created_by list filter: a principal URL is at most
// "/principal/" and a kind:id of principal.MaxIDBytes, each byte encoded as %XX.
const maxCreatedByLength = 2048

// createdByURL is the principal URL a created_by filter names: a principal URL
// (/principal/user%3Aada, the form entities carry) or key (user:ada) is taken to that
// principal's URL; anything else is matched as written.
func createdByURL(v string) string {
	if p, ok := principal.ParseAny(v); ok {
		return p.URL()
	}
	return v
}

// spawn is PUT /_electric/entities/:type/:id.
func (s *handlers) spawn(w http.ResponseWriter, r *http.Request) error {
	typ, id := api.Param(r, "type"), api.Param(r, "id")
	if typ == "principal" {
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, "principal entities cannot be spawned")
	}
	if !validSegment(id, maxInstanceIDLength) {
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest,
			"Instance ids must be 1-256 characters of letters, digits, '-', '_', '.', ':' and '@'")
	}
	b, err := s.kit.ReadJSON(w, r)
	if err != nil {
		return err
	}
	args := b.Object("args")
	tags := b.StringMap("tags", maxTagKeyLength, maxTagValueLength)
	parent, _ := b.Str("parent")
	initialType, _ := b.Str("initialMessageType")
	if err := b.Fail(); err != nil {
		return err
	}
	t, err := s.registry.Type(r.Context(), typ)
	if errors.Is(err, entity.ErrTypeNotFound) {
		return httpx.New(http.StatusNotFound, CodeUnknownEntityType, "Entity type not found: "+typ)
	}
	if err != nil {
		return err
	}
	url := entitypath.URL(typ, id)
	if _, err := s.registry.Get(r.Context(), url); err == nil {
		return duplicateURL(url)
	}
	p := api.Caller(r)
	if parent != "" {
		// spawning under a parent needs spawn on the parent too
		if pe, err := s.kit.NamedEntity(r, parent); err == nil {
			if err := s.kit.RequireEntity(r, p, pe, authz.Spawn); err != nil {
				return err
			}
		}
	}
	grants, err := spawnGrants(b.Raw("grants"))
	if err != nil {
		return err
	}
	if err := s.kit.GrantQuota(r, p, len(grants)); err != nil {
		return err
	}
	if n := s.registry.TagLimit(); n > 0 && len(tags) > n {
		return s.tooManyTags()
	}
	req := entity.SpawnRequest{Type: typ, InstanceID: id, Args: args, Tags: tags, Parent: parent, CreatedBy: p.URL()}
	// a wake on the new entity (wake_registrations.go) commits with it
	wakeInTx, wakeAfter, err := s.spawnWake(r, b, url)
	if err != nil {
		return err
	}
	req.InTx = wakeInTx
	if err := s.registry.CheckArgs(t, args); err != nil {
		return spawnError(err, url)
	}
	if b.Has("initialMessage") {
		// The initial message is validated like any send, and before anything exists, so
		// a refused message leaves no half-created entity behind.
		msg := &inbox.SendRequest{Payload: b.Raw("initialMessage"), Type: initialType, Sender: p.URL()}
		probe := &entity.Entity{URL: url, Type: typ, InboxSchemas: t.InboxSchemas}
		if err := s.sender.Validate(probe, t, msg); err != nil {
			return sendError(err)
		}
		req.Initial = [][]byte{s.sender.Prepare(msg).Event}
	}
	// The origin the client reached us at names the callback URLs of a dispatch
	// subscription the spawn may create (only spawns need it, so only they carry it).
	// the creator's principal entity, as the reference makes it on every spawn: once the
	// request is known good, so that a refused spawn writes nothing
	if err := s.ensureSenderEntity(r); err != nil {
		return err
	}
	ctx := authz.WithSpawnGrants(httpx.WithOrigin(r.Context(), httpx.RequestOrigin(r)), grants)
	res, err := s.registry.Spawn(ctx, t, req)
	if err != nil {
		return spawnError(err, url)
	}
	if wakeAfter != nil {
		wakeAfter()
	}
	o := res.Entity.JSONObject()
	o.Int("txid", res.Txid)
	w.Header().Set("X-Write-Token", res.Entity.WriteToken)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(o.Bytes())
	return nil
}

func duplicateURL(url string) *httpx.Error {
	return httpx.New(http.StatusConflict, CodeDuplicateURL, "An entity already exists at "+url)
}

func spawnError(err error, url string) error {
	var ve *entity.ValidationError
	switch {
	case errors.Is(err, entity.ErrDuplicate):
		return duplicateURL(url)
	case errors.Is(err, entity.ErrParentNotFound):
		return httpx.New(http.StatusNotFound, api.CodeNotFound, "Parent entity not found")
	case errors.As(err, &ve):
		return httpx.New(http.StatusUnprocessableEntity, api.CodeSchemaValidationFailed, ve.Message).WithDetails(ve.Details)
	}
	return err
}

// entityAt loads the entity named by the route, answering 404 NOT_FOUND when the type
// exists but the entity does not, and 404 UNKNOWN_ENTITY_TYPE when neither does.
func (s *handlers) entityAt(r *http.Request) (*entity.Entity, error) {
	return s.lookupEntity(r, s.registry.Get)
}

// knownEntityAt is entityAt for paths that need only what never changes after spawn (the
// send path): it is served from memory once the entity has been seen, because the
// entity's status is checked again inside the append's transaction.
func (s *handlers) knownEntityAt(r *http.Request) (*entity.Entity, error) {
	return s.lookupEntity(r, s.registry.Known)
}

func (s *handlers) lookupEntity(r *http.Request, get func(context.Context, string) (*entity.Entity, error)) (*entity.Entity, error) {
	typ, id := api.Param(r, "type"), api.Param(r, "id")
	url := entitypath.URL(typ, id)
	e, err := get(r.Context(), url)
	if errors.Is(err, entity.ErrNotFound) {
		if _, terr := s.registry.Type(r.Context(), typ); errors.Is(terr, entity.ErrTypeNotFound) {
			return nil, httpx.New(http.StatusNotFound, CodeUnknownEntityType, "Entity type not found: "+typ)
		}
		return nil, httpx.New(http.StatusNotFound, api.CodeNotFound, "Entity not found at "+url)
	}
	return e, err
}

func (s *handlers) getEntity(w http.ResponseWriter, r *http.Request) error {
	e, err := s.entityAt(r)
	if err != nil {
		return err
	}
	o := e.JSONObject()
	if t, err := s.registry.Type(r.Context(), e.Type); err == nil && t.ExternallyWritableCollections != nil {
		o.Raw("externally_writable_collections", t.ExternallyWritableCollections)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(o.Bytes())
	return nil
}

func (s *handlers) headEntity(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.entityAt(r); err != nil {
		var apiErr *httpx.Error
		if errors.As(err, &apiErr) {
			w.WriteHeader(apiErr.Status)
			return nil
		}
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (s *handlers) listEntities(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := entity.Filter{Type: q.Get("type"), Status: q.Get("status"), Parent: q.Get("parent"), After: q.Get("after")}
	if v := q.Get("created_by"); v != "" {
		if len(v) > maxCreatedByLength {
			return httpx.BadRequest(fmt.Sprintf("created_by must be at most %d bytes", maxCreatedByLength))
		}
		f.CreatedBy = createdByURL(v)
	}
	if f.Status != "" && !entity.Status(f.Status).Valid() {
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest,
			"status must be one of running, idle, paused, stopping, stopped, killed")
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > entity.MaxListLimit {
			return httpx.BadRequest(fmt.Sprintf("limit must be an integer from 1 to %d", entity.MaxListLimit))
		}
		f.Limit = n
	}
	list, err := s.registry.List(r.Context(), f)
	if errors.Is(err, entity.ErrCursorGone) {
		return httpx.BadRequest("after names an entity that no longer exists; list again from the start")
	}
	if err != nil {
		return err
	}
	setNextPage(w, r, list, f.Limit)
	mayRead, err := s.checker.EntityFilter(r.Context(), api.Caller(r), authz.Read)
	if err != nil {
		return err
	}
	visible := list[:0]
	for _, e := range list {
		if mayRead(r.Context(), e) {
			visible = append(visible, e)
		}
	}
	httpx.WriteJSON(w, http.StatusOK, visible)
	return nil
}

// killEntity is DELETE /_electric/entities/:type/:id, a SIGKILL.
func (s *handlers) killEntity(w http.ResponseWriter, r *http.Request) error {
	e, err := s.entityAt(r)
	if err != nil {
		return err
	}
	if err := refusePrincipalMutation(e, "killed"); err != nil {
		return err
	}
	res, err := s.registry.Signal(r.Context(), e.URL, entity.SignalRequest{Signal: entity.SIGKILL})
	if err != nil {
		return signalError(err)
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]int64{"txid": res.Txid})
	return nil
}

// signal is POST /_electric/entities/:type/:id/signal.
func (s *handlers) signal(w http.ResponseWriter, r *http.Request) error {
	e, err := s.entityAt(r)
	if err != nil {
		return err
	}
	if err := refusePrincipalMutation(e, "signaled"); err != nil {
		return err
	}
	b, err := s.kit.ReadJSON(w, r)
	if err != nil {
		return err
	}
	sig, hasSig := b.Str("signal")
	reason, hasReason := b.Text("reason")
	if err := b.Fail(); err != nil {
		return err
	}
	if !hasSig || !entity.ValidSignal(sig) {
		return jsonbody.SchemaMismatch(validation.Details{{Path: "/signal",
			Message: "must be one of " + strings.Join([]string{"SIGINT", "SIGHUP", "SIGTERM", "SIGKILL", "SIGSTOP", "SIGCONT", "SIGUSR"}, ", ")}})
	}
	req := entity.SignalRequest{Signal: sig, Payload: b.Raw("payload")}
	if hasReason {
		req.Reason = &reason
	}
	res, err := s.registry.Signal(r.Context(), e.URL, req)
	if err != nil {
		return signalError(err)
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{
		"url": res.URL, "signal": res.Signal, "previous_state": res.PreviousState, "new_state": res.NewState,
		"created_at": res.CreatedAt.UnixMilli(), "txid": res.Txid,
	})
	return nil
}

func signalError(err error) error {
	var inv *entity.InvalidSignalError
	switch {
	case errors.As(err, &inv):
		return httpx.New(http.StatusConflict, CodeInvalidSignal, "Entity is "+string(inv.Status)+" and accepts no signals")
	case errors.Is(err, entity.ErrNotFound):
		return httpx.New(http.StatusNotFound, api.CodeNotFound, "Entity not found")
	}
	return err
}
