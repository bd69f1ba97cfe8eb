package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/entityd/entityd/api/dsapi"
	"github.com/entityd/entityd/attachment"
	"github.com/entityd/entityd/authz"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/principal"
	"github.com/entityd/entityd/membership"
	"github.com/entityd/entityd/schedule"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/webhooksrc"
)

var opPermission = map[dsapi.Op]authz.Permission{dsapi.OpRead: authz.Read, dsapi.OpWrite: authz.Write, dsapi.OpClose: authz.Write,
	dsapi.OpDelete: authz.Delete, dsapi.OpRecreate: authz.Write, dsapi.OpManage: authz.Manage}

// decideStream is the one access decision about a stream. Every request that reaches a
// stream's bytes or changes a stream asks it — reads of every kind, HEAD, a fork's
// source, appends, closes, deletes, a PUT over an existing stream, grants — and it
// decides from what was recorded when the stream was created (id.Access), never from
// what else exists now:
//   - an entity's stream is read with read permission on its entity and appended to
//     with the entity's write token (never a principal); it is never closed, deleted or
//     created through the stream API;
//   - a wake stream (a runner's), a tag-membership stream (/_entities/<ref>) and a
//     pg-sync stream (/_electric/pg-sync/<ref>) are read by their owner and written by
//     the server only; a cron stream (/_cron/<spec>) is
//     read by any authenticated principal and written by the server only;
//   - a shared-state stream (/_electric/shared-state/<id>) is read and written by the
//     principals that may read or write an entity linked to it (sharedStateOwnerHeader
//     makes the first link); only privileged principals delete it;
//   - a webhook source's stream (/_webhooks/<endpointKey>[/...]) is read by the source's
//     owner, or by any authenticated principal when the source is public
//     (webhooksrc.Readable), and written by the server only (verified deliveries);
//   - a plain stream belongs to its creator; others need a grant of the permission,
//     except under a configured public prefix, where every authenticated principal may
//     read and append (closing, deleting and grants stay with the owner).
//
// Privileged principals pass every principal check. It returns the request with the
// caller on its context.
func (s *Server) decideStream(r *http.Request, id streamdb.Identity, path string, op dsapi.Op) (*http.Request, error) {
	if loose := s.loosened.Load(); loose != nil && (*loose)(id.Access.Kind, op) {
		return s.authenticated(r) // a test showing that the isolation matrix notices
	}
	switch id.Access.Kind {
	case streamdb.AccessEntity:
		return s.decideEntityStream(r, id, path, op)
	case streamdb.AccessWake:
		return s.decideServerStream(r, id, path, op, "a runner's wake stream", false)
	case streamdb.AccessCron:
		return s.decideServerStream(r, id, path, op, "a cron stream", true)
	case streamdb.AccessMembers:
		return s.decideServerStream(r, id, path, op, "a tag-membership stream", false)
	case streamdb.AccessShared:
		return s.decideSharedState(r, id, path, op)
	case streamdb.AccessWebhook, streamdb.AccessWebhookPublic:
		return s.decideWebhookStream(r, id, path, op)
	case streamdb.AccessPgSync:
		return s.decidePgSync(r, id, path, op)
	}
	r, err := s.authenticated(r)
	if err != nil {
		return r, err
	}
	if (op == dsapi.OpRead || op == dsapi.OpWrite) && s.publicStream(path) {
		return r, nil
	}
	perm := opPermission[op]
	ok, err := s.checker.Stream(r.Context(), caller(r), id, perm)
	if err != nil {
		return r, err
	}
	if !ok {
		if op == dsapi.OpRecreate {
			return r, newError(http.StatusConflict, dsapi.CodeStreamExists, "A stream exists at this path")
		}
		return r, s.streamDenied(perm, path)
	}
	return r, nil
}

// decideEntityStream decides for an entity's main or slash-command collection stream,
// and for its attachments' streams.
func (s *Server) decideEntityStream(r *http.Request, id streamdb.Identity, path string, op dsapi.Op) (*http.Request, error) {
	if attachment.IsStreamPath(path) && op != dsapi.OpRead && op != dsapi.OpManage {
		// an attachment's stream is written once, closed, by its upload; read with the
		// entity's read permission like the entity's other streams
		r, err := s.authenticated(r)
		if err != nil {
			return r, err
		}
		return r, newError(http.StatusMethodNotAllowed, CodeMethodNotAllowed,
			"An attachment's stream is written by POST and deleted by DELETE /_electric/entities/:type/:id/attachments[/:id]")
	}
	switch op {
	case dsapi.OpWrite, dsapi.OpClose:
		if strings.HasSuffix(path, entitypath.CollectionSuffix) {
			return r, newError(http.StatusMethodNotAllowed, CodeMethodNotAllowed,
				"The slash-command collection is written through PUT and DELETE /_electric/entities/:type/:id/slash-commands/:name")
		}
		if err := s.authorizeEntityWrite(r, id.Access.Entity); err != nil {
			return r, err
		}
		if op == dsapi.OpClose {
			return r, newError(http.StatusForbidden, CodeForbidden,
				"A write token cannot close an entity's stream: it is closed when the entity is killed (DELETE /_electric/entities/:type/:id)")
		}
		return r, nil
	}
	r, err := s.authenticated(r)
	if err != nil {
		return r, err
	}
	switch op {
	case dsapi.OpDelete:
		return r, newError(http.StatusMethodNotAllowed, CodeMethodNotAllowed,
			"Entity streams are closed by killing the entity (DELETE /_electric/entities/:type/:id)")
	case dsapi.OpRecreate:
		return r, newError(http.StatusMethodNotAllowed, CodeMethodNotAllowed,
			"Entity streams are created by spawning the entity (PUT /_electric/entities/:type/:id)")
	case dsapi.OpManage:
		return r, httpx.BadRequest("An entity's streams are shared with the entity's grants (/_electric/entities/:type/:id/grants)")
	}
	e, err := s.registry.Known(r.Context(), id.Access.Entity)
	if errors.Is(err, entity.ErrNotFound) {
		return r, newError(http.StatusNotFound, dsapi.CodeStreamNotFound, "Stream not found")
	}
	if err != nil {
		return r, err
	}
	ok, err := s.checker.Entity(r.Context(), caller(r), e, authz.Read)
	if err != nil {
		return r, err
	}
	if !ok {
		// a known caller who may not read: 403, which Durable Streams clients do not
		// take for a credential to refresh (401 is for missing or bad credentials)
		return r, newError(http.StatusForbidden, CodeForbidden, "Principal is not allowed to read "+e.URL)
	}
	return r, nil
}

// authenticated finds the caller (401 without valid credentials) and carries it on the
// request's context.
func (s *Server) authenticated(r *http.Request) (*http.Request, error) {
	if _, ok := principal.FromContext(r.Context()); ok {
		return r, nil
	}
	p, err := s.authenticate(r)
	if err != nil {
		return r, err
	}
	return r.WithContext(principal.WithContext(r.Context(), p)), nil
}

// streamDenied is the answer to a known principal without perm on a stream: 403 (a
// Durable Streams client takes 401 for credentials to refresh).
func (s *Server) streamDenied(perm authz.Permission, path string) error {
	return newError(http.StatusForbidden, CodeForbidden, "Principal is not allowed to "+string(perm)+" the stream "+path)
}

// publicStream reports whether path is under a prefix the operator made public.
func (s *Server) publicStream(path string) bool {
	for _, p := range s.cfg.PublicStreamPrefixes {
		if under(path, p) {
			return true
		}
	}
	return false
}

// under reports whether path is prefix or below it ("/pub" covers "/pub" and "/pub/x",
// not "/public").
func under(path, prefix string) bool {
	prefix = strings.TrimSuffix(prefix, "/")
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// reservedStreamPath refuses a plain stream at a path the server creates streams at
// itself: an entity's streams (whether or not its type exists yet: a plain stream there
// would pre-empt the entity), a runner's wake stream, and the API's own prefixes.
func reservedStreamPath(path string) error {
	for _, reserved := range ReservedPrefixes {
		if under(path, reserved) {
			return httpx.BadRequest("The stream path is under the reserved prefix " + reserved)
		}
	}
	if _, _, _, ok := entitypath.Parse(path); ok {
		return newError(http.StatusMethodNotAllowed, CodeMethodNotAllowed,
			"Entity streams are created by spawning the entity (PUT /_electric/entities/:type/:id); /<type>/<id>/main and /<type>/<id>/slash-commands are reserved for them")
	}
	if strings.HasPrefix(path, webhooksrc.StreamPrefix) {
		return newError(http.StatusForbidden, CodeForbidden,
			"Streams under "+webhooksrc.StreamPrefix+" are the server's: a webhook source makes them (POST /_electric/webhook-sources, a subscription to a bucket, a delivery)")
	}
	for _, server := range []string{schedule.CronPrefix, membership.Prefix} {
		if strings.HasPrefix(path, server) {
			return newError(http.StatusForbidden, CodeForbidden,
				"Streams under "+server+" are the server's: ensure them with POST /_electric/observations/…/ensure-stream")
		}
	}
	if entitypath.IsRunnerWake(path) {
		return newError(http.StatusForbidden, CodeForbidden,
			"Runner wake streams are created by registering the runner (POST /_electric/runners)")
	}
	if attachment.IsStreamPath(path) {
		return newError(http.StatusMethodNotAllowed, CodeMethodNotAllowed,
			"/<type>/<id>/attachments/<id> is reserved for attachments: upload with POST /_electric/entities/:type/:id/attachments")
	}
	return nil
}

// decideServerStream decides for a stream the server writes: read by its owner (or, when
// anyReader, by any authenticated principal) and by privileged principals.
func (s *Server) decideServerStream(r *http.Request, id streamdb.Identity, path string, op dsapi.Op, what string, anyReader bool) (*http.Request, error) {
	r, err := s.authenticated(r)
	if err != nil {
		return r, err
	}
	if op != dsapi.OpRead {
		return r, newError(http.StatusForbidden, CodeForbidden, "This stream is written by the server only ("+what+")")
	}
	if p := caller(r); !anyReader && !s.checker.Privileged(p) && id.Access.Owner != p.String() {
		return r, s.streamDenied(authz.Read, path)
	}
	return r, nil
}

// decidePgSync decides for a pg-sync stream: written by the server only; read by the
// principal that registered the observation and, when it named the observing entity
// (which it had to be allowed to write), by those who may read that entity.
func (s *Server) decidePgSync(r *http.Request, id streamdb.Identity, path string, op dsapi.Op) (*http.Request, error) {
	r, err := s.decideServerStream(r, id, path, op, "a pg-sync stream", true)
	if err != nil || id.Access.Entity == "" {
		if err == nil && !s.checker.Privileged(caller(r)) && id.Access.Owner != caller(r).String() {
			return r, s.streamDenied(authz.Read, path)
		}
		return r, err
	}
	p := caller(r)
	if s.checker.Privileged(p) || id.Access.Owner == p.String() {
		return r, nil
	}
	e, err := s.registry.Known(r.Context(), id.Access.Entity)
	if errors.Is(err, entity.ErrNotFound) {
		return r, s.streamDenied(authz.Read, path)
	}
	if err != nil {
		return r, err
	}
	ok, err := s.checker.Entity(r.Context(), p, e, authz.Read)
	if err != nil {
		return r, err
	}
	if !ok {
		return r, s.streamDenied(authz.Read, path)
	}
	return r, nil
}

// sharedStateOwnerHeader names, on a PUT or POST of shared state, the entity the caller
// writes it for (the runtime's mkdb): the link that lets that entity's principals use it.
const sharedStateOwnerHeader = "Electric-Owner-Entity"

// decideSharedState decides for a shared-state stream (authz.Checker.SharedState). A
// write naming an owner entity the caller may write links the stream to that entity
// before it is answered, so that the runtime's read right after mkdb finds the link.
func (s *Server) decideSharedState(r *http.Request, id streamdb.Identity, path string, op dsapi.Op) (*http.Request, error) {
	r, err := s.authenticated(r)
	if err != nil {
		return r, err
	}
	p := caller(r)
	perm := authz.Write
	owner := ""
	switch op {
	case dsapi.OpRead:
		perm = authz.Read
	case dsapi.OpWrite, dsapi.OpClose, dsapi.OpRecreate:
		owner = strings.TrimSpace(r.Header.Get(sharedStateOwnerHeader))
	case dsapi.OpManage:
		return r, httpx.BadRequest("Shared state is shared through the entities linked to it (their grants), not through stream grants")
	default:
		if s.checker.Privileged(p) {
			return r, nil
		}
		return r, newError(http.StatusForbidden, CodeForbidden,
			"Shared state is kept while entities use it; only privileged principals delete it")
	}
	if owner != "" {
		if _, err := s.namedEntity(r, owner); errors.Is(err, entity.ErrNotFound) {
			return r, newError(http.StatusNotFound, CodeNotFound, "Entity not found at "+owner+" (electric-owner-entity)")
		} else if err != nil {
			return r, err
		}
	}
	ok, err := s.checker.SharedState(r.Context(), p, id, perm, owner)
	if err != nil {
		return r, err
	}
	if !ok {
		return r, newError(http.StatusForbidden, CodeForbidden, "Principal is not allowed to "+string(perm)+" shared state "+path)
	}
	if owner != "" && id.ID != 0 {
		if err := s.linkSharedState(r, nil, id.ID, owner); err != nil {
			return r, err
		}
	}
	return r, nil
}

// linkSharedState links shared-state stream streamID to owner when the caller may write
// owner (a privileged caller may name any entity that exists).
func (s *Server) linkSharedState(r *http.Request, tx *streamdb.Tx, streamID int64, owner string) error {
	e, err := s.registry.Known(r.Context(), owner)
	if errors.Is(err, entity.ErrNotFound) {
		return nil // nothing to link; the decision did not count it either
	}
	if err != nil {
		return err
	}
	ok, err := s.checker.Entity(r.Context(), caller(r), e, authz.Write)
	if err != nil || !ok {
		return err
	}
	if err := s.grants.LinkSharedState(r.Context(), tx, streamID, e.URL, caller(r)); err != nil {
		if errors.Is(err, authz.ErrTooManyLinks) {
			return newError(http.StatusConflict, CodeInvalidRequest, fmt.Sprintf("A shared state is linked to at most %d entities", authz.MaxSharedStateLinks))
		}
		return err
	}
	return nil
}

// decideWebhookStream decides for a webhook source's stream: read (and a PUT confirming it,
// which Electric's runtime sends before observing it) by webhooksrc.Readable's rule;
// nothing else, since only verified deliveries are appended.
func (s *Server) decideWebhookStream(r *http.Request, id streamdb.Identity, path string, op dsapi.Op) (*http.Request, error) {
	r, err := s.authenticated(r)
	if err != nil {
		return r, err
	}
	p := caller(r)
	if !webhooksrc.Readable(id.Access, p, s.checker.Privileged(p)) {
		return r, s.streamDenied(authz.Read, path)
	}
	if op != dsapi.OpRead && op != dsapi.OpRecreate {
		return r, newError(http.StatusForbidden, CodeForbidden,
			"This stream is written by the server only (a webhook source's verified deliveries)")
	}
	return r, nil
}
