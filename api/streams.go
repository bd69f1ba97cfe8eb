package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/entityd/entityd/api/dsapi"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/httpx"
)

// ReservedPrefixes are the root paths that are not streams: entityd's own API and the
// Durable Streams control routes.
var ReservedPrefixes = []string{"/_electric", "/__ds"}

// streamRoutes serves the Durable Streams protocol at every path outside the reserved
// prefixes (and under the /v1/stream alias) with one implementation. Who may do what to
// a stream is decided by decideStream from what is recorded about the stream; the
// handlers below ask it before they touch a stream's bytes.
func (s *Server) streamRoutes() http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		path := dsapi.StreamPath(r.URL.Path)
		if path == "/" {
			if s.home != "" && (r.Method == http.MethodGet || r.Method == http.MethodHead) && wantsHTML(r) {
				// A browser opening the server's address lands on the console.
				http.Redirect(w, r, s.home, http.StatusFound)
				return nil
			}
			return newError(http.StatusNotFound, dsapi.CodeStreamNotFound, "A stream path needs a name")
		}
		return s.ds.Serve(w, r, path)
	})
}

// SharedStatePrefix is where the runtime's shared state (ctx.mkdb, db()) lives: one
// stream per id, /_electric/shared-state/<id>.
const SharedStatePrefix = "/_electric/shared-state/"

// isSharedStatePath reports whether path is one shared state's stream.
func isSharedStatePath(path string) bool {
	id, ok := strings.CutPrefix(path, SharedStatePrefix)
	return ok && id != "" && !strings.Contains(id, "/")
}

// sharedStateRoutes serves the Durable Streams protocol for shared state, under the
// reserved /_electric prefix, with the handlers of every stream.
func (s *Server) sharedStateRoutes() http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		path := r.URL.Path
		if !isSharedStatePath(path) {
			return newError(http.StatusNotFound, CodeNotFound, "No route for "+r.Method+" "+path)
		}
		return s.ds.Serve(w, r, path)
	})
}

// authorizeEntityWrite guards direct appends to an entity's stream: only a holder of
// the entity's write token (Authorization: Bearer, or Electric-Claim-Token) may append.
func (s *Server) authorizeEntityWrite(r *http.Request, entityURL string) error {
	token := WriteToken(r)
	if token == "" {
		return newError(http.StatusUnauthorized, CodeUnauthorized,
			"Missing write token: appending to an entity stream needs Authorization: Bearer <X-Write-Token from spawn>")
	}
	e, err := s.registry.Known(r.Context(), entityURL)
	if errors.Is(err, entity.ErrNotFound) {
		return newError(http.StatusNotFound, dsapi.CodeStreamNotFound, "Stream not found")
	}
	if err != nil {
		return err
	}
	if httpx.EqualTokens(token, e.WriteToken) {
		return nil
	}
	if s.cfg.ClaimTokens != nil {
		ok, err := s.cfg.ClaimTokens(r.Context(), entitypath.Main(entityURL), token)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
	}
	return newError(http.StatusUnauthorized, CodeUnauthorized, "Invalid write token")
}

// PgSyncPrefix is where pgSync observations' streams live (package pgsync): read with
// the Durable Streams protocol under the reserved /_electric prefix, written by the
// server only.
const PgSyncPrefix = "/_electric/pg-sync/"

// pgSyncRoutes serves pg-sync streams with the handlers of every stream, as the
// /v1/stream alias reaches them too; their one access decision is decideStream's (the
// registering principal reads; nobody but the server writes).
func (s *Server) pgSyncRoutes() http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		path := r.URL.Path
		ref, ok := strings.CutPrefix(path, PgSyncPrefix)
		if !ok || ref == "" || strings.Contains(ref, "/") {
			return newError(http.StatusNotFound, CodeNotFound, "No route for "+r.Method+" "+path)
		}
		return s.ds.Serve(w, r, path)
	})
}
