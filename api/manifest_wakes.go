package api

import (
	"errors"
	"net/http"

	"go.uber.org/zap"

	"github.com/entityd/entityd/api/dsapi"
	"github.com/entityd/entityd/authz"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/principal"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wakereg"
)

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
	_, err = s.decideStream(r.WithContext(principal.WithContext(ctx, creator)), id, source, dsapi.OpRead)
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
