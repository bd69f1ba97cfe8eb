package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/entityd/entityd/api/dsapi"
	"github.com/entityd/entityd/authz"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/inflight"
	"github.com/entityd/entityd/internal/jsonbody"
	"github.com/entityd/entityd/internal/principal"
	"github.com/entityd/entityd/streamdb"
)

// EntityRoutes registers Electric's entity API (package api/entityapi) on the server's
// /_electric router. wrap makes a route's handler answer failures as every route does
// (after admission: the route's access rule); kit is what those handlers use of the
// server.
type EntityRoutes func(r chi.Router, kit Kit, wrap func(httpx.HandlerFunc) http.HandlerFunc)

// Kit is what a room of the HTTP API kept in a package of its own (Electric's entity
// API) uses of the server: its configuration, request bodies read under the byte
// budget, the access decisions and the quotas the rooms share. It holds no state.
type Kit struct{ s *Server }

// Config is the server's configuration (defaults applied).
func (k Kit) Config() Config { return k.s.cfg }

// Log is the API's logger.
func (k Kit) Log() *zap.Logger { return k.s.log }

// Grants are the grants store and Checker the access checks over them.
func (k Kit) Grants() *authz.Store    { return k.s.grants }
func (k Kit) Checker() *authz.Checker { return k.s.checker }

// ReadJSON reads a JSON object body of at most Config.MaxBodyBytes under a reservation
// of its size (bytes in flight).
func (k Kit) ReadJSON(w http.ResponseWriter, r *http.Request) (*jsonbody.Body, error) {
	return k.s.readJSON(w, r)
}

// ReadBodyReserved reads a body of at most limit bytes under a reservation of its size,
// released when ReadBodyReserved returns.
func (k Kit) ReadBodyReserved(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	var h inflight.Hold
	defer h.Release()
	return k.s.budget.ReadBody(w, r, inflight.KeyFor(r, ""), limit, 1, &h)
}

// Reserve holds n bytes in flight for the caller (a body read as it streams in, an
// attachment upload) until release is called; 503 + Retry-After when they are not free
// within the wait.
func (k Kit) Reserve(r *http.Request, n int64) (release func(), err error) {
	h := new(inflight.Hold)
	if err := k.s.budget.Reserve(r.Context(), h, inflight.KeyFor(r, ""), n, "body"); err != nil {
		return func() {}, err
	}
	return h.Release, nil
}

// NewGrant reads the one grant a grant route makes (unknown members refused) and checks
// that the caller may make another (the grant quota).
func (k Kit) NewGrant(w http.ResponseWriter, r *http.Request) (authz.GrantRequest, error) {
	return k.s.newGrant(w, r)
}

// GrantQuota is checked before p makes n grants at once.
func (k Kit) GrantQuota(r *http.Request, p principal.Principal, n int) error {
	return k.s.grantQuota(r.Context(), p, n)
}

// RequireEntity checks perm on e for p (403, or 401 with a challenge, when refused).
func (k Kit) RequireEntity(r *http.Request, p principal.Principal, e *entity.Entity, perm authz.Permission) error {
	return k.s.requireEntity(r, p, e, perm)
}

// RequireType checks perm on the type name for p.
func (k Kit) RequireType(r *http.Request, p principal.Principal, name string, perm authz.Permission) error {
	return k.s.requireType(r, p, name, perm)
}

// RequireStreamRead asks the stream's one access decision whether the caller may read
// the stream id at path.
func (k Kit) RequireStreamRead(r *http.Request, id streamdb.Identity, path string) error {
	_, err := k.s.decideStream(r, id, path, dsapi.OpRead)
	return err
}

// NamedEntity is the entity at url, for a route that names one in its body: the
// registry's (Known), or for a principal entity not made yet what Server's
// namedPrincipalEntity gives (made for its principal, a stand-in others' permission
// checks refuse). entity.ErrNotFound when there is none.
func (k Kit) NamedEntity(r *http.Request, url string) (*entity.Entity, error) {
	return k.s.namedEntity(r, url)
}

// Caller is the principal admission authenticated; on a route that asks for none it is
// the zero principal, which no check lets through.
func Caller(r *http.Request) principal.Principal { return caller(r) }

// Param is a route parameter, percent-decoded.
func Param(r *http.Request, name string) string { return param(r, name) }
