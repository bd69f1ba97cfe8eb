package api

import (
	"context"
	"errors"
	"net/http"

	"go.uber.org/zap"

	"github.com/entityd/entityd/authz"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/jsonbody"
	"github.com/entityd/entityd/internal/principal"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wakereg"
)

// maxWakeBodyBytes bounds the body of POST /_electric/wake and /wake/unregister.
const maxWakeBodyBytes = 64 << 10

// CodeInvalidWakeUnregister is the reference's answer to an unregister that names
// neither a source nor a manifest key.
const CodeInvalidWakeUnregister = "INVALID_WAKE_UNREGISTER"

// registerWake is POST /_electric/wake: wake subscriberUrl when sourceUrl changes (or a
// run of it finishes). The caller must be allowed to write to the subscriber (a wake is
// a write to its stream) and to read the source (a wake carries the source's changes).
func (s *Server) registerWake(w http.ResponseWriter, r *http.Request) error {
	raw, err := s.readWakeBody(w, r)
	if err != nil {
		return err
	}
	spec, d := wakereg.ParseSpec(raw, "", true)
	if len(d) > 0 {
		return jsonbody.SchemaMismatch(d)
	}
	p := caller(r)
	if _, err := s.wakeSubscriber(r, p, spec.SubscriberURL); err != nil {
		return err
	}
	stream, err := s.wakeSource(r, p, spec.SourceURL)
	if err != nil {
		return err
	}
	if err := s.quotas.wakes(r.Context(), p); err != nil {
		return err
	}
	if err := s.wakes.Register(r.Context(), &wakereg.Registration{Spec: spec, SourceStream: stream, CreatedBy: p.String()}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// unregisterWake is POST /_electric/wake/unregister: {subscriberUrl, sourceUrl?,
// manifestKey?}, by source when given, else by manifest key.
func (s *Server) unregisterWake(w http.ResponseWriter, r *http.Request) error {
	raw, err := s.readWakeBody(w, r)
	if err != nil {
		return err
	}
	subscriber, source, key, d := wakereg.ParseUnregister(raw)
	if len(d) > 0 {
		return jsonbody.SchemaMismatch(d)
	}
	if _, err := s.wakeSubscriber(r, caller(r), subscriber); err != nil {
		return err
	}
	switch {
	case source != nil:
		err = s.wakes.UnregisterSource(r.Context(), subscriber, *source)
	case key != nil:
		err = s.wakes.UnregisterManifest(r.Context(), subscriber, *key)
	default:
		return newError(http.StatusBadRequest, CodeInvalidWakeUnregister, "sourceUrl or manifestKey is required")
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) readWakeBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	var h hold
	defer h.release()
	data, err := s.readBodyReserved(w, r, keyFor(r, ""), maxWakeBodyBytes, 1, &h)
	if err != nil {
		return nil, err
	}
	if _, err := jsonbody.Parse(data); err != nil { // the API's answers to a body that is not a JSON object
		return nil, err
	}
	return data, nil
}

// wakeSubscriber finds the subscriber entity and checks that p may write to it.
func (s *Server) wakeSubscriber(r *http.Request, p principal.Principal, url string) (*entity.Entity, error) {
	e, err := s.registry.Known(r.Context(), url)
	if errors.Is(err, entity.ErrNotFound) {
		return nil, newError(http.StatusNotFound, CodeNotFound, "Subscriber entity not found: "+url)
	}
	if err != nil {
		return nil, err
	}
	return e, s.requireEntity(r, p, e, authz.Write)
}

// wakeSource checks that p may read the source (an entity, or a stream by its one
// access decision) and returns the stream the source is read from. A source must exist:
// a registration on a path nobody owns yet would see whatever a later owner writes.
func (s *Server) wakeSource(r *http.Request, p principal.Principal, url string) (string, error) {
	if wakereg.LooksLikeEntity(url) {
		e, err := s.registry.Known(r.Context(), url)
		if errors.Is(err, entity.ErrNotFound) {
			return "", newError(http.StatusNotFound, CodeNotFound, "Source entity not found: "+url)
		}
		if err != nil {
			return "", err
		}
		return wakereg.EntitySource(url), s.requireEntity(r, p, e, authz.Read)
	}
	id, err := s.streams.Identify(r.Context(), url)
	if errors.Is(err, streamdb.ErrNotFound) || errors.Is(err, streamdb.ErrGone) {
		return "", newError(http.StatusNotFound, CodeStreamNotFound, "Source stream not found: "+url)
	}
	if err != nil {
		return "", err
	}
	if _, err := s.decideStream(r, id, url, opRead); err != nil {
		return "", err
	}
	return url, nil
}

// spawnWake reads a spawn's `wake` ({subscriberUrl, condition, ...}: the new entity is
// the source): the subscriber must be writable by the caller. It returns what runs in
// the spawn's transaction and what runs after the commit (nil, nil without a wake).
func (s *Server) spawnWake(r *http.Request, b *jsonbody.Body, url string) (func(context.Context, *streamdb.Tx, *entity.Entity) error, func(), error) {
	if !b.Has("wake") {
		return nil, nil, nil
	}
	spec, d := wakereg.ParseSpec(b.Raw("wake"), "/wake", false)
	if len(d) > 0 {
		return nil, nil, jsonbody.SchemaMismatch(d)
	}
	p := caller(r)
	if _, err := s.wakeSubscriber(r, p, spec.SubscriberURL); err != nil {
		return nil, nil, err
	}
	if err := s.quotas.wakes(r.Context(), p); err != nil {
		return nil, nil, err
	}
	spec.SourceURL = url
	reg := &wakereg.Registration{Spec: spec, SourceStream: wakereg.EntitySource(url), CreatedBy: p.String()}
	inTx := func(ctx context.Context, tx *streamdb.Tx, _ *entity.Entity) error {
		return wakereg.RegisterTx(ctx, tx, reg)
	}
	after := func() { s.wakes.Noted(context.WithoutCancel(r.Context()), reg.SourceStream) }
	return inTx, after, nil
}

// manifestWakes turns the manifest events among what a handler appends to the entity at
// url into statements of the append's transaction (see wakereg.ManifestEntries), and
// returns the sources to note once it has committed. A wake on a source the entity's
// creator may not read, and that is not the entity's own child, registers nothing.
func (s *Server) manifestWakes(r *http.Request, url string, msgs [][]byte) ([]streamdb.Statement, []string, error) {
	entries := wakereg.ManifestEntries(url, msgs)
	if len(entries) == 0 || s.wakes == nil {
		return nil, nil, nil
	}
	e, err := s.registry.Known(r.Context(), url)
	if err != nil {
		return nil, nil, err
	}
	creator, _ := principal.ParseAny(derefString(e.CreatedBy))
	var sources []string
	for i := range entries {
		w := entries[i].Wake
		if w == nil {
			continue
		}
		ok, err := s.manifestSourceAllowed(r, e, creator, w.SourceURL)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			s.log.Info("manifest wake on a source the entity may not read: not registered",
				zap.String("entity", url), zap.String("source", w.SourceURL))
			entries[i].Wake = nil
			continue
		}
		sources = append(sources, wakereg.SourceStreamOf(w.SourceURL))
	}
	return wakereg.ManifestStatements(url, derefString(e.CreatedBy), entries), sources, nil
}

func (s *Server) manifestSourceAllowed(r *http.Request, e *entity.Entity, creator principal.Principal, source string) (bool, error) {
	ctx := r.Context()
	if wakereg.LooksLikeEntity(source) {
		se, err := s.registry.Known(ctx, source)
		if errors.Is(err, entity.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if se.Parent != nil && *se.Parent == e.URL || se.URL == e.URL {
			return true, nil // its own child (or itself)
		}
		return s.checker.Entity(ctx, creator, se, authz.Read)
	}
	id, err := s.streams.Identify(ctx, source)
	if errors.Is(err, streamdb.ErrNotFound) || errors.Is(err, streamdb.ErrGone) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	// the stream's one access decision, asked for the entity's creator
	_, err = s.decideStream(r.WithContext(principal.WithContext(ctx, creator)), id, source, opRead)
	var refused *Error
	if errors.As(err, &refused) && refused.Status < 500 {
		return false, nil
	}
	return err == nil, err
}

func derefString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
