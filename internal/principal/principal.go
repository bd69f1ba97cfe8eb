// Package principal is who makes a request: a kind and an id, parsed from the
// Electric-Principal header (dev mode) or a verified token's claim (jwt mode, package
// authn), and carried on the request's context. In dev mode a request that names no
// (parseable) principal acts as the development principal system:dev-local, like the
// reference server outside production.
package principal

import (
	"context"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/entityd/entityd/internal/entitypath"
)

// Principal is a caller identity of kind user, agent, service or system.
type Principal struct {
	Kind string
	ID   string
}

// Dev is the principal of requests that name none.
var Dev = Principal{Kind: "system", ID: "dev-local"}

// Header is the request header that names the principal.
const Header = "Electric-Principal"

// Parse reads a principal written literally as "kind:id": nothing is trimmed or
// decoded, so two different strings never name the same principal. ok is false for
// anything else, including an id with a control, format or space character (which
// would print like another principal's id in logs and answers).
func Parse(v string) (p Principal, ok bool) {
	kind, id, found := strings.Cut(v, ":")
	if !found || !ValidID(id) {
		return Principal{}, false
	}
	switch kind {
	case "user", "agent", "service", "system":
		return Principal{Kind: kind, ID: id}, true
	}
	return Principal{}, false
}

// ParseURL reads a principal's entity URL, "/principal/<kind%3Aid>" (URL), as stored in
// created_by columns and accepted where a principal is named by its URL.
func ParseURL(v string) (p Principal, ok bool) {
	rest, found := strings.CutPrefix(v, "/principal/")
	if !found {
		return Principal{}, false
	}
	dec, err := url.PathUnescape(rest)
	if err != nil {
		return Principal{}, false
	}
	return Parse(dec)
}

// ParseAny reads either form, "kind:id" or its URL.
func ParseAny(v string) (p Principal, ok bool) {
	if p, ok := ParseURL(v); ok {
		return p, true
	}
	return Parse(v)
}

// ValidID reports whether id can be a principal's id: non-empty valid UTF-8 of at most
// MaxIDBytes with no control, format (zero-width, bidirectional) or space characters.
func ValidID(id string) bool {
	if id == "" || len(id) > MaxIDBytes || !utf8.ValidString(id) {
		return false
	}
	for _, r := range id {
		if unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) || unicode.IsSpace(r) || unicode.Is(unicode.Z, r) {
			return false
		}
	}
	return true
}

// MaxIDBytes bounds a principal's id.
const MaxIDBytes = 256

// FromHeader returns the principal named by the dev-mode header value v ("kind:id" or
// its URL, surrounding spaces ignored: in dev mode anyone may name any principal), or
// Dev.
func FromHeader(v string) Principal {
	if p, ok := ParseAny(strings.TrimSpace(v)); ok {
		return p
	}
	return Dev
}

// URL is the principal's entity URL, e.g. /principal/system%3Adev-local.
func (p Principal) URL() string { return "/principal/" + EncodeURIComponent(p.Kind+":"+p.ID) }

// EncodeURIComponent escapes s like JavaScript's encodeURIComponent (one definition, in
// internal/entitypath, which names principal entities with it).
func EncodeURIComponent(s string) string { return entitypath.EncodeURIComponent(s) }

type ctxKey struct{}

// WithContext records on ctx who is making the request.
func WithContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext is the principal WithContext recorded; ok is false for a request that
// authenticated as nobody (no credentials in jwt mode).
func FromContext(ctx context.Context) (p Principal, ok bool) {
	p, ok = ctx.Value(ctxKey{}).(Principal)
	return p, ok
}

// IsSystem reports whether p is one of the server's own principals, which every
// permission check lets through.
func (p Principal) IsSystem() bool { return p.Kind == "system" }

// String is "kind:id".
func (p Principal) String() string { return p.Kind + ":" + p.ID }
