package entityapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/api/dsapi"
	"github.com/entityd/entityd/authz"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/httpx"
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
func (s *handlers) registerWake(w http.ResponseWriter, r *http.Request) error {
	raw, err := s.readWakeBody(w, r)
	if err != nil {
		return err
	}
	spec, d := wakereg.ParseSpec(raw, "", true)
	if len(d) > 0 {
		return jsonbody.SchemaMismatch(d)
	}
	p := api.Caller(r)
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
func (s *handlers) unregisterWake(w http.ResponseWriter, r *http.Request) error {
	raw, err := s.readWakeBody(w, r)
	if err != nil {
		return err
	}
	subscriber, source, key, d := wakereg.ParseUnregister(raw)
	if len(d) > 0 {
		return jsonbody.SchemaMismatch(d)
	}
	if _, err := s.wakeSubscriber(r, api.Caller(r), subscriber); err != nil {
		return err
	}
	switch {
	case source != nil:
		err = s.wakes.UnregisterSource(r.Context(), subscriber, *source)
	case key != nil:
		err = s.wakes.UnregisterManifest(r.Context(), subscriber, *key)
	default:
		return httpx.New(http.StatusBadRequest, CodeInvalidWakeUnregister, "sourceUrl or manifestKey is required")
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *handlers) readWakeBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	data, err := s.kit.ReadBodyReserved(w, r, maxWakeBodyBytes)
	if err != nil {
		return nil, err
	}
	if _, err := jsonbody.Parse(data); err != nil { // the API's answers to a body that is not a JSON object
		return nil, err
	}
	return data, nil
}

// wakeSubscriber finds the subscriber entity and checks that p may write to it.
func (s *handlers) wakeSubscriber(r *http.Request, p principal.Principal, url string) (*entity.Entity, error) {
	e, err := s.kit.NamedEntity(r, url)
	if errors.Is(err, entity.ErrNotFound) {
		return nil, httpx.New(http.StatusNotFound, api.CodeNotFound, "Subscriber entity not found: "+url)
	}
	if err != nil {
		return nil, err
	}
	return e, s.kit.RequireEntity(r, p, e, authz.Write)
}

// wakeSource checks that p may read the source (an entity, or a stream by its one
// access decision) and returns the stream the source is read from. A source must exist:
// a registration on a path nobody owns yet would see whatever a later owner writes.
func (s *handlers) wakeSource(r *http.Request, p principal.Principal, url string) (string, error) {
	if wakereg.LooksLikeEntity(url) {
		e, err := s.kit.NamedEntity(r, url)
		if errors.Is(err, entity.ErrNotFound) {
			return "", httpx.New(http.StatusNotFound, api.CodeNotFound, "Source entity not found: "+url)
		}
		if err != nil {
			return "", err
		}
		return wakereg.EntitySource(url), s.kit.RequireEntity(r, p, e, authz.Read)
	}
	id, err := s.streams.Identify(r.Context(), url)
	if errors.Is(err, streamdb.ErrNotFound) || errors.Is(err, streamdb.ErrGone) {
		return "", httpx.New(http.StatusNotFound, dsapi.CodeStreamNotFound, "Source stream not found: "+url)
	}
	if err != nil {
		return "", err
	}
	if err := s.kit.RequireStreamRead(r, id, url); err != nil {
		return "", err
	}
	return url, nil
}

// spawnWake reads a spawn's `wake` ({subscriberUrl, condition, ...}: the new entity is
// the source): the subscriber must be writable by the caller. It returns what runs in
// the spawn's transaction and what runs after the commit (nil, nil without a wake).
func (s *handlers) spawnWake(r *http.Request, b *jsonbody.Body, url string) (func(context.Context, *streamdb.Tx, *entity.Entity) error, func(), error) {
	if !b.Has("wake") {
		return nil, nil, nil
	}
	spec, d := wakereg.ParseSpec(b.Raw("wake"), "/wake", false)
	if len(d) > 0 {
		return nil, nil, jsonbody.SchemaMismatch(d)
	}
	p := api.Caller(r)
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
