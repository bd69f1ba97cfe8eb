package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/entityd/entityd/authz"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/authn"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/principal"
)

// CodeForbidden answers a principal that is known but may not use a route at all.
const (
	CodeForbidden       = "FORBIDDEN"
	CodeAuthUnavailable = "AUTH_UNAVAILABLE"
)

// admit applies the route's access rule before its handler runs: it authenticates the
// caller when the rule needs a principal (carried on the returned request's context)
// and checks the permission the rule names. Entities and types that do not exist are
// left to the handler, which answers 404 as the reference does.
func (s *Server) admit(r *http.Request) (*http.Request, error) {
	rule, ok := s.ruleFor(r)
	if !ok {
		s.log.Error("route has no access rule; refused", zap.String("method", r.Method),
			zap.String("route", chi.RouteContext(r.Context()).RoutePattern()))
		return r, newError(http.StatusInternalServerError, CodeInternal, "Internal server error")
	}
	if rule.kind == rulePublic || rule.kind == ruleToken || rule.kind == ruleStream {
		return r, nil // streams: decideStream, from what the stream recorded
	}
	p, err := s.authenticate(r)
	if err != nil {
		return r, err
	}
	r = r.WithContext(principal.WithContext(r.Context(), p))
	if err := s.checker.NoteUser(r.Context(), p); err != nil {
		// the users shape misses this user until its next request; the request goes on
		s.log.Warn("cannot record a user principal", zap.String("principal", p.String()), zap.Error(err))
	}
	switch rule.kind {
	case ruleAdmin:
		if !s.checker.Privileged(p) {
			return r, newError(http.StatusForbidden, CodeForbidden, "Principal "+p.String()+" may not use "+r.Method+" "+r.URL.Path+
				" (privileged principals only)")
		}
	case ruleEntity:
		typ, id := param(r, "type"), param(r, "id")
		url := entitypath.URL(typ, id)
		e, err := s.registry.Known(r.Context(), url)
		if errors.Is(err, entity.ErrNotFound) && typ == entitypath.PrincipalType {
			e, err = s.principalEntity(r, p, id, rule.perm)
		}
		if errors.Is(err, entity.ErrNotFound) {
			return r, nil
		}
		if err != nil {
			return r, err
		}
		if err := s.requireEntity(r, p, e, rule.perm); err != nil {
			return r, err
		}
	case ruleType, ruleSpawn:
		name := param(r, "name")
		if rule.kind == ruleSpawn {
			name = param(r, "type")
			if name == entitypath.PrincipalType {
				return r, nil // the handler refuses the spawn (400), as the reference does before asking
			}
		}
		if _, err := s.registry.Type(r.Context(), name); errors.Is(err, entity.ErrTypeNotFound) {
			return r, nil
		} else if err != nil {
			return r, err
		}
		if err := s.requireType(r, p, name, rule.perm); err != nil {
			return r, err
		}
	}
	return r, nil
}

// ruleFor finds the rule of the route r matched.
func (s *Server) ruleFor(r *http.Request) (accessRule, bool) {
	pattern := normalPattern(chi.RouteContext(r.Context()).RoutePattern())
	if rule, ok := normalRules[r.Method+" "+pattern]; ok {
		return rule, true
	}
	rule, ok := normalRules["* "+pattern]
	return rule, ok
}

// normalPattern drops a trailing slash: chi reports "/x" or "/x/" for a subrouter's
// root depending on the request.
func normalPattern(p string) string {
	if len(p) > 1 {
		return strings.TrimSuffix(p, "/")
	}
	return p
}

// normalRules is routeRules keyed by normal patterns.
var normalRules = func() map[string]accessRule {
	out := make(map[string]accessRule, len(routeRules))
	for k, v := range routeRules {
		method, pattern, _ := strings.Cut(k, " ")
		out[method+" "+normalPattern(pattern)] = v
	}
	return out
}()

// authenticate finds the caller; anonymous callers get 401 (only jwt mode has them).
func (s *Server) authenticate(r *http.Request) (principal.Principal, error) {
	if p, ok := principal.FromContext(r.Context()); ok {
		return p, nil
	}
	p, ok, err := s.auth.Authenticate(r)
	switch {
	case errors.Is(err, authn.ErrKeysUnavailable):
		s.log.Warn("cannot verify a token: signing keys unavailable", zap.Error(err))
		return p, &retryable{e: newError(http.StatusServiceUnavailable, CodeAuthUnavailable,
			"The token's signing keys cannot be fetched right now; retry shortly")}
	case err != nil:
		return p, s.unauthorized(err, "")
	case !ok:
		return p, s.unauthorized(nil, "Authentication required: send Authorization: Bearer <token>")
	}
	return p, nil
}

// retryable is an error answered with Retry-After.
type retryable struct{ e *Error }

func (r *retryable) Error() string { return r.e.Error() }

// unauthorized is a 401 with the challenge of the server's mode.
func (s *Server) unauthorized(err error, msg string) error {
	if msg == "" {
		msg = "Invalid credentials"
		var ae *authn.Error
		if errors.As(err, &ae) {
			msg = "Invalid token: " + ae.Reason
		}
	}
	e := newError(http.StatusUnauthorized, CodeUnauthorized, msg)
	return &challenged{e: e, challenge: authn.Challenge(s.auth.Mode(), err)}
}

// challenged is a 401 with its WWW-Authenticate value.
type challenged struct {
	e         *Error
	challenge string
}

func (c *challenged) Error() string { return c.e.Error() }

// denied is the reference's answer to a principal without a permission: 401
// UNAUTHORIZED "Principal is not allowed to <perm> <url>".
func (s *Server) denied(perm authz.Permission, target string) error {
	e := newError(http.StatusUnauthorized, CodeUnauthorized, "Principal is not allowed to "+string(perm)+" "+target)
	if s.auth.Mode() == authn.ModeJWT {
		return &challenged{e: e, challenge: `Bearer realm="entityd", error="insufficient_scope"`}
	}
	return e
}

// requireEntity checks perm on e for p.
func (s *Server) requireEntity(r *http.Request, p principal.Principal, e *entity.Entity, perm authz.Permission) error {
	ok, err := s.checker.Entity(r.Context(), p, e, perm)
	if err != nil {
		return err
	}
	if !ok {
		return s.denied(perm, e.URL)
	}
	return nil
}

// requireType checks perm on type name for p.
func (s *Server) requireType(r *http.Request, p principal.Principal, name string, perm authz.Permission) error {
	ok, err := s.checker.Type(r.Context(), p, name, perm)
	if err != nil {
		return err
	}
	if !ok {
		return s.denied(perm, "entity type "+name)
	}
	return nil
}

// caller is the principal admit authenticated; on a route that asks for none it is the
// zero principal, which no check lets through.
func caller(r *http.Request) principal.Principal {
	p, _ := principal.FromContext(r.Context())
	return p
}

// RouteAccess is one route and the rule it is served under (for the authorisation
// matrix test and documentation). Kind is "" for a route without a rule.
type RouteAccess struct {
	Method, Pattern string
	Kind            string // public, token, principal, admin, entity, type, spawn, register, stream
	Permission      string // for entity and type rules
}

var ruleKindNames = map[ruleKind]string{rulePublic: "public", ruleToken: "token", rulePrincipal: "principal",
	ruleAdmin: "admin", ruleEntity: "entity", ruleType: "type", ruleSpawn: "spawn", ruleRegister: "register",
	ruleStream: "stream"}

// AccessRules lists every route of the router with its rule.
func (s *Server) AccessRules() ([]RouteAccess, error) {
	var out []RouteAccess
	mux, ok := s.Handler().(chi.Routes)
	if !ok {
		return nil, errors.New("api: the handler is not a chi router")
	}
	err := chi.Walk(mux, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		ra := RouteAccess{Method: method, Pattern: route}
		key := normalPattern(route)
		rule, found := normalRules[method+" "+key]
		if !found {
			rule, found = normalRules["* "+key]
		}
		if found {
			ra.Kind, ra.Permission = ruleKindNames[rule.kind], string(rule.perm)
		}
		out = append(out, ra)
		return nil
	})
	return out, err
}
