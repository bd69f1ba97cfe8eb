// Package authn decides who a request comes from.
//
// Two modes:
//   - dev: the principal named by the Electric-Principal header, or system:dev-local when
//     there is none, as the reference server does outside production. Only safe on a
//     loopback address (the server refuses to start otherwise unless told explicitly).
//   - jwt: "Authorization: Bearer <JWT>", verified against configured public keys (a PEM
//     file, a JWKS file or a JWKS URL). EdDSA, ES256 and RS256 only; the principal is a
//     claim (sub by default). The Electric-Principal header is ignored.
//
// Authentication is lazy: routes whose credential is a capability (a claim token, a
// write token, a callback token) never ask for a principal, so their bearer tokens are
// never mistaken for JWTs.
package authn

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/entityd/entityd/internal/principal"
)

// Mode is how requests are authenticated.
type Mode string

const (
	// ModeDev trusts the Electric-Principal header (loopback only).
	ModeDev Mode = "dev"
	// ModeJWT verifies bearer JWTs.
	ModeJWT Mode = "jwt"
)

// ParseMode reads "dev" or "jwt".
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case ModeDev, ModeJWT:
		return m, nil
	}
	return "", fmt.Errorf("auth mode must be dev or jwt, not %q", s)
}

// Authenticator finds the principal of a request.
type Authenticator interface {
	// Authenticate returns the request's principal. ok is false when the request
	// carries no credentials at all (anonymous); err is an *Error when it carries bad
	// ones, or ErrKeysUnavailable when they cannot be checked right now.
	Authenticate(r *http.Request) (p principal.Principal, ok bool, err error)
	// Mode is the authenticator's mode.
	Mode() Mode
}

// Error is a credential that was presented and refused; Reason is safe to show the
// client (it never repeats the token).
type Error struct{ Reason string }

func (e *Error) Error() string { return "authentication failed: " + e.Reason }

// ErrKeysUnavailable means a token could not be checked because its signing key could
// not be fetched (the JWKS endpoint is down): a temporary failure, not a verdict.
var ErrKeysUnavailable = errors.New("authn: the signing keys are unavailable")

// Dev is the dev-mode authenticator.
type Dev struct{}

// Authenticate returns the principal the Electric-Principal header names, or
// system:dev-local.
func (Dev) Authenticate(r *http.Request) (principal.Principal, bool, error) {
	return principal.FromHeader(r.Header.Get(principal.Header)), true, nil
}

// Mode is ModeDev.
func (Dev) Mode() Mode { return ModeDev }

// Challenge is the WWW-Authenticate value of a 401 in mode m (RFC 6750).
func Challenge(m Mode, err error) string {
	if m != ModeJWT {
		return ""
	}
	var ae *Error
	if errors.As(err, &ae) {
		return `Bearer realm="entityd", error="invalid_token", error_description="` +
			strings.ReplaceAll(ae.Reason, `"`, "'") + `"`
	}
	return `Bearer realm="entityd"`
}
