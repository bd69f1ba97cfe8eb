package entityapi

import (
	"errors"
	"net/http"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/membership"
	"github.com/entityd/entityd/schedule"
	"github.com/entityd/entityd/streamdb"
)

// Bounds of a tag observation.
const maxObservedTags = 32

// ensureCronStream is POST /_electric/observations/cron/ensure-stream
// {expression, timezone?} → {streamUrl}: the cron stream /_cron/<spec>, ticking.
func (s *handlers) ensureCronStream(w http.ResponseWriter, r *http.Request) error {
	if s.schedules == nil {
		return httpx.New(http.StatusServiceUnavailable, api.CodeServiceUnavailable, "Cron observations are not served by this server")
	}
	b, err := s.kit.ReadJSON(w, r)
	if err != nil {
		return err
	}
	b.Only("expression", "timezone")
	expr, ok := b.Text("expression")
	if !ok && !b.Has("expression") {
		b.Details.Add("/expression", "must have required property 'expression'")
	}
	tz, _ := b.Str("timezone")
	if err := b.Fail(); err != nil {
		return err
	}
	spec, err := schedule.Resolve(expr, tz)
	if err != nil {
		return scheduleError(err)
	}
	path, err := s.schedules.EnsureCron(r.Context(), spec)
	if err != nil {
		return scheduleError(err)
	}
	var o rawjson.Object
	o.String("streamUrl", path)
	writeJSONBytes(w, o.Bytes())
	return nil
}

// ensureEntitiesStream is POST /_electric/observations/entities/ensure-stream {tags?} →
// {sourceRef, streamUrl}: the caller's membership stream of the entities with the tags.
func (s *handlers) ensureEntitiesStream(w http.ResponseWriter, r *http.Request) error {
	if s.members == nil {
		return httpx.New(http.StatusServiceUnavailable, api.CodeServiceUnavailable, "Tag observations are not served by this server")
	}
	b, err := s.kit.ReadJSON(w, r)
	if err != nil {
		return err
	}
	b.Only("tags")
	tags := b.StringMap("tags", maxTagKeyLength, maxTagValueLength)
	if len(tags) > maxObservedTags {
		b.Details.Add("/tags", "must have at most 32 properties")
	}
	if err := b.Fail(); err != nil {
		return err
	}
	p := api.Caller(r)
	ref := membership.SourceRef(orNoTags(tags), p.Kind, p.URL())
	if _, err := s.streams.Lookup(r.Context(), membership.Prefix+ref); errors.Is(err, streamdb.ErrNotFound) || errors.Is(err, streamdb.ErrGone) {
		if err := s.quotas.observation(r.Context(), p); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	ref, path, err := s.members.Ensure(r.Context(), p, tags)
	if err != nil {
		return err
	}
	var o rawjson.Object
	o.String("sourceRef", ref).String("streamUrl", path)
	writeJSONBytes(w, o.Bytes())
	return nil
}

func orNoTags(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func writeJSONBytes(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}
