package authn

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/principal"
)

// JWTConfig configures jwt mode.
type JWTConfig struct {
	// Keys is a PEM public key file, a JWKS file, or an https JWKS URL.
	Keys string
	// Issuer and Audience are checked when set.
	Issuer, Audience string
	// PrincipalClaim names the claim that holds the principal ("sub" by default).
	PrincipalClaim string
	// Leeway is the clock skew allowed on exp and nbf (30s by default).
	Leeway time.Duration
	// Client returns the HTTP client for a JWKS URL (the outbound rules).
	Client func(*url.URL) *http.Client
}

// acceptedAlgs are the only signature algorithms a token may use: no "none", no HMAC
// (a public key must never double as a shared secret).
var acceptedAlgs = []string{"EdDSA", "ES256", "RS256"}

// maxTokenBytes bounds what is parsed at all.
const maxTokenBytes = 8 << 10

// JWT is the jwt-mode authenticator. Verified tokens are cached (by their hash, until
// they expire) so that a client sending the same token on every request pays for one
// signature check.
type JWT struct {
	cfg    JWTConfig
	keys   keySource
	parser *jwt.Parser
	now    func() time.Time

	mu    sync.Mutex
	cache map[[32]byte]cachedToken
}

type cachedToken struct {
	p   principal.Principal
	exp time.Time
}

// maxCachedTokens bounds the cache; when full it is emptied (tokens are re-verified).
const maxCachedTokens = 10_000

// NewJWT opens the key source (a key file is read now, so a bad one stops the start).
func NewJWT(cfg JWTConfig) (*JWT, error) {
	if cfg.Keys == "" {
		return nil, errors.New("jwt mode needs ENTITYD_JWT_KEYS (a PEM public key file, a JWKS file or an https JWKS URL)")
	}
	if cfg.PrincipalClaim == "" {
		cfg.PrincipalClaim = "sub"
	}
	if cfg.Leeway <= 0 {
		cfg.Leeway = 30 * time.Second
	}
	if cfg.Client == nil {
		cfg.Client = func(*url.URL) *http.Client { return http.DefaultClient }
	}
	keys, err := openKeys(cfg.Keys, cfg.Client)
	if err != nil {
		return nil, err
	}
	j := &JWT{cfg: cfg, keys: keys, now: time.Now, cache: map[[32]byte]cachedToken{}}
	opts := []jwt.ParserOption{jwt.WithValidMethods(acceptedAlgs), jwt.WithLeeway(cfg.Leeway),
		jwt.WithExpirationRequired(), jwt.WithTimeFunc(func() time.Time { return j.now() })}
	if cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.Issuer))
	}
	if cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(cfg.Audience))
	}
	j.parser = jwt.NewParser(opts...)
	return j, nil
}

// Mode is ModeJWT.
func (j *JWT) Mode() Mode { return ModeJWT }

// Authenticate verifies the request's bearer token.
func (j *JWT) Authenticate(r *http.Request) (principal.Principal, bool, error) {
	tok := httpx.Bearer(r)
	if tok == "" {
		if r.Header.Get("Authorization") != "" {
			return principal.Principal{}, false, &Error{Reason: "the Authorization header must be Bearer <token>"}
		}
		return principal.Principal{}, false, nil
	}
	p, err := j.Verify(r.Context(), tok)
	return p, err == nil, err
}

// Verify checks one token and returns its principal.
func (j *JWT) Verify(ctx context.Context, tok string) (principal.Principal, error) {
	if len(tok) > maxTokenBytes {
		return principal.Principal{}, &Error{Reason: "token too large"}
	}
	sum := sha256.Sum256([]byte(tok))
	now := j.now()
	j.mu.Lock()
	c, hit := j.cache[sum]
	j.mu.Unlock()
	if hit && now.Before(c.exp.Add(j.cfg.Leeway)) {
		return c.p, nil
	}
	var keysErr error
	claims := jwt.MapClaims{}
	_, err := j.parser.ParseWithClaims(tok, claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		keys, err := j.keys.keys(ctx, kid)
		if err != nil {
			keysErr = err
			return nil, err
		}
		set := jwt.VerificationKeySet{}
		for _, k := range keys {
			if algFits(t.Method.Alg(), k.key) {
				set.Keys = append(set.Keys, k.key)
			}
		}
		if len(set.Keys) == 0 {
			return nil, errors.New("no key for this token")
		}
		return set, nil
	})
	if keysErr != nil && errors.Is(keysErr, ErrKeysUnavailable) {
		return principal.Principal{}, keysErr
	}
	if err != nil {
		return principal.Principal{}, &Error{Reason: reason(err)}
	}
	p, err := j.principalOf(claims)
	if err != nil {
		return principal.Principal{}, err
	}
	exp, _ := claims.GetExpirationTime() // required by the parser
	j.mu.Lock()
	if len(j.cache) >= maxCachedTokens {
		clear(j.cache)
	}
	j.cache[sum] = cachedToken{p: p, exp: exp.Time}
	j.mu.Unlock()
	return p, nil
}

// principalOf maps the principal claim, taken literally: "kind:id" for kind user, agent
// or service, and anything else is a user of that id. Nothing is trimmed or decoded, so
// no other string becomes the same principal; a claim with a control, format or space
// character anywhere is refused rather than shown as a look-alike. A token cannot name
// a system principal (those bypass every check; they are the server's own).
func (j *JWT) principalOf(claims jwt.MapClaims) (principal.Principal, error) {
	v, _ := claims[j.cfg.PrincipalClaim].(string)
	if v == "" {
		return principal.Principal{}, &Error{Reason: "the token has no " + j.cfg.PrincipalClaim + " claim"}
	}
	if !principal.ValidID(v) {
		return principal.Principal{}, &Error{Reason: "the " + j.cfg.PrincipalClaim + " claim is not a usable principal"}
	}
	if p, ok := principal.Parse(v); ok {
		if p.IsSystem() {
			return principal.Principal{}, &Error{Reason: "a token cannot name a system principal"}
		}
		return p, nil
	}
	if kind, _, found := strings.Cut(v, ":"); found && (kind == "system" || kind == "user" || kind == "agent" || kind == "service") {
		// "user:" with nothing after it: not a principal, and not to become user:user:
		return principal.Principal{}, &Error{Reason: "the " + j.cfg.PrincipalClaim + " claim is not a usable principal"}
	}
	return principal.Principal{Kind: "user", ID: v}, nil
}

// reason turns a parser error into words for the client.
func reason(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "malformed token"
	case errors.Is(err, jwt.ErrTokenExpired):
		return "token expired"
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return "token not valid yet"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return "token has no exp claim"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return "wrong issuer"
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return "wrong audience"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return "signature not verified (unknown key or algorithm; EdDSA, ES256 and RS256 are accepted)"
	}
	return "invalid token"
}
