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

// Parse reads "kind:id" or "/principal/<kind%3Aid>"; ok is false when v is neither.
func Parse(v string) (p Principal, ok bool) {
	v = strings.TrimSpace(v)
	if rest, found := strings.CutPrefix(v, "/principal/"); found {
		dec, err := url.PathUnescape(rest)
		if err != nil {
			return Principal{}, false
		}
		v = dec
	}
	kind, id, found := strings.Cut(v, ":")
	if !found || id == "" {
		return Principal{}, false
	}
	switch kind {
	case "user", "agent", "service", "system":
		return Principal{Kind: kind, ID: id}, true
	}
	return Principal{}, false
}

// FromHeader returns the principal named by header value v, or Dev.
func FromHeader(v string) Principal {
	if p, ok := Parse(v); ok {
		return p
	}
	return Dev
}

// URL is the principal's entity URL, e.g. /principal/system%3Adev-local.
func (p Principal) URL() string { return "/principal/" + EncodeURIComponent(p.Kind+":"+p.ID) }

// EncodeURIComponent escapes s like JavaScript's encodeURIComponent.
func EncodeURIComponent(s string) string {
	const unreserved = "-_.!~*'()"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(unreserved, c) >= 0 {
			b.WriteByte(c)
			continue
		}
		const hex = "0123456789ABCDEF"
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xf])
	}
	return b.String()
}

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
