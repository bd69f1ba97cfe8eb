package authn

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/principal"
)

type signer struct {
	kid    string
	method jwt.SigningMethod
	priv   crypto.Signer
}

func newEd(t *testing.T, kid string) signer {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return signer{kid: kid, method: jwt.SigningMethodEdDSA, priv: priv}
}

func newES(t *testing.T, kid string) signer {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	return signer{kid: kid, method: jwt.SigningMethodES256, priv: priv}
}

func newRS(t *testing.T, kid string) signer {
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	return signer{kid: kid, method: jwt.SigningMethodRS256, priv: priv}
}

func (s signer) sign(t *testing.T, claims jwt.MapClaims) string {
	tok := jwt.NewWithClaims(s.method, claims)
	if s.kid != "" {
		tok.Header["kid"] = s.kid
	}
	out, err := tok.SignedString(s.priv)
	require.NoError(t, err)
	return out
}

func (s signer) jwk() jose.JSONWebKey {
	return jose.JSONWebKey{Key: s.priv.Public(), KeyID: s.kid, Use: "sig", Algorithm: s.method.Alg()}
}

func jwks(t *testing.T, ss ...signer) []byte {
	set := jose.JSONWebKeySet{}
	for _, s := range ss {
		set.Keys = append(set.Keys, s.jwk())
	}
	data, err := json.Marshal(set)
	require.NoError(t, err)
	return data
}

func pemOf(t *testing.T, s signer) []byte {
	der, err := x509.MarshalPKIXPublicKey(s.priv.Public())
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func writeFile(t *testing.T, name string, data []byte) string {
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, data, 0o600))
	return p
}

func claims(sub string, exp time.Duration) jwt.MapClaims {
	return jwt.MapClaims{"sub": sub, "exp": time.Now().Add(exp).Unix(), "iat": time.Now().Unix()}
}

func bearer(tok string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	return r
}

// refusal asserts that tok is refused as a bad credential (401, not 503).
func refusal(t *testing.T, j *JWT, tok, want string) {
	t.Helper()
	_, ok, err := j.Authenticate(bearer(tok))
	require.False(t, ok)
	var ae *Error
	require.ErrorAs(t, err, &ae, "got %v", err)
	require.Contains(t, ae.Reason, want)
}

func TestJWTAlgorithmsAndClaims(t *testing.T) {
	ed, es, rs := newEd(t, "ed"), newES(t, "es"), newRS(t, "rs")
	j, err := NewJWT(JWTConfig{Keys: writeFile(t, "keys.json", jwks(t, ed, es, rs)), Issuer: "https://idp", Audience: "entityd"})
	require.NoError(t, err)
	good := func(sub string) jwt.MapClaims {
		c := claims(sub, time.Hour)
		c["iss"], c["aud"] = "https://idp", "entityd"
		return c
	}
	for _, s := range []signer{ed, es, rs} {
		p, ok, err := j.Authenticate(bearer(s.sign(t, good("alice"))))
		require.NoError(t, err, s.method.Alg())
		require.True(t, ok)
		require.Equal(t, principal.Principal{Kind: "user", ID: "alice"}, p)
	}
	p, _, err := j.Authenticate(bearer(ed.sign(t, good("agent:bot-1"))))
	require.NoError(t, err)
	require.Equal(t, principal.Principal{Kind: "agent", ID: "bot-1"}, p)

	expired := good("alice")
	expired["exp"] = time.Now().Add(-time.Hour).Unix()
	refusal(t, j, ed.sign(t, expired), "expired")
	early := good("alice")
	early["nbf"] = time.Now().Add(time.Hour).Unix()
	refusal(t, j, ed.sign(t, early), "not valid yet")
	noExp := good("alice")
	delete(noExp, "exp")
	refusal(t, j, ed.sign(t, noExp), "exp")
	wrongIss := good("alice")
	wrongIss["iss"] = "https://evil"
	refusal(t, j, ed.sign(t, wrongIss), "issuer")
	wrongAud := good("alice")
	wrongAud["aud"] = "other"
	refusal(t, j, ed.sign(t, wrongAud), "audience")
	refusal(t, j, ed.sign(t, good("system:dev-local")), "system")
	noSub := good("")
	refusal(t, j, ed.sign(t, noSub), "sub")

	// a key entityd does not know, under a kid it does know
	stranger := newEd(t, "ed")
	refusal(t, j, stranger.sign(t, good("alice")), "signature")
	// a key of one algorithm used with another's kid
	mixed := newES(t, "ed")
	refusal(t, j, mixed.sign(t, good("alice")), "signature")

	// alg:none
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, good("alice")).SignedString(jwt.UnsafeAllowNoneSignatureType)
	require.NoError(t, err)
	refusal(t, j, none, "signature")
	// HS256 with the server's public key as the shared secret (the classic confusion)
	pub, err := x509.MarshalPKIXPublicKey(rs.priv.Public())
	require.NoError(t, err)
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, good("alice"))
	hs.Header["kid"] = "rs"
	forged, err := hs.SignedString(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))
	require.NoError(t, err)
	refusal(t, j, forged, "signature")

	refusal(t, j, "not.a.jwt", "malformed")
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Authorization", "Basic YTpi")
	_, ok, err := j.Authenticate(r)
	require.False(t, ok)
	require.Error(t, err)
	_, ok, err = j.Authenticate(httptest.NewRequest(http.MethodGet, "/", nil))
	require.False(t, ok)
	require.NoError(t, err, "no credentials is anonymous, not an error")
}

func TestJWTPEMKey(t *testing.T) {
	es := newES(t, "")
	j, err := NewJWT(JWTConfig{Keys: writeFile(t, "key.pem", pemOf(t, es)), PrincipalClaim: "email"})
	require.NoError(t, err)
	c := claims("ignored", time.Hour)
	c["email"] = "bob@example.com"
	p, ok, err := j.Authenticate(bearer(es.sign(t, c)))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "bob@example.com", p.ID)
	refusal(t, j, newES(t, "").sign(t, c), "signature")
}

func TestJWTKeyFilesRefused(t *testing.T) {
	_, err := NewJWT(JWTConfig{Keys: writeFile(t, "k.json", []byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0","kid":"h"}]}`))})
	require.ErrorContains(t, err, "HMAC")
	priv, _ := rsa.GenerateKey(rand.Reader, 2048)
	der := x509.MarshalPKCS1PrivateKey(priv)
	_, err = NewJWT(JWTConfig{Keys: writeFile(t, "k.pem", pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: der}))})
	require.ErrorContains(t, err, "PUBLIC KEY")
	_, err = NewJWT(JWTConfig{Keys: filepath.Join(t.TempDir(), "missing.pem")})
	require.Error(t, err)
	_, err = NewJWT(JWTConfig{})
	require.ErrorContains(t, err, "ENTITYD_JWT_KEYS")
}

// jwksServer serves a key set that the test can replace, counting fetches, and can be
// taken down.
type jwksServer struct {
	*httptest.Server
	body    atomic.Pointer[[]byte]
	down    atomic.Bool
	fetches atomic.Int32
}

func newJWKSServer(t *testing.T, body []byte) *jwksServer {
	s := &jwksServer{}
	s.body.Store(&body)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		if s.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/jwk-set+json")
		_, _ = w.Write(*s.body.Load())
	}))
	t.Cleanup(s.Close)
	return s
}

func TestJWTRemoteKeysRotateAndOutage(t *testing.T) {
	old, rotated := newEd(t, "k1"), newEd(t, "k2")
	srv := newJWKSServer(t, jwks(t, old))
	j, err := NewJWT(JWTConfig{Keys: srv.URL + "/jwks.json",
		Client: func(*url.URL) *http.Client { return srv.Client() }})
	require.NoError(t, err)
	clock := time.Now()
	j.now = func() time.Time { return clock }
	j.keys.(*remoteKeys).now = func() time.Time { return clock }

	_, ok, err := j.Authenticate(bearer(old.sign(t, claims("alice", time.Hour))))
	require.NoError(t, err)
	require.True(t, ok)
	require.EqualValues(t, 1, srv.fetches.Load())

	// the identity provider rotates: a token with the new kid makes entityd fetch again
	both := jwks(t, old, rotated)
	srv.body.Store(&both)
	clock = clock.Add(11 * time.Second)
	_, ok, err = j.Authenticate(bearer(rotated.sign(t, claims("alice", time.Hour))))
	require.NoError(t, err)
	require.True(t, ok)
	require.EqualValues(t, 2, srv.fetches.Load())

	// made-up kids do not make it hammer the endpoint
	for range 5 {
		refusal(t, j, newEd(t, "made-up").sign(t, claims("mallory", time.Hour)), "signature")
	}
	require.EqualValues(t, 2, srv.fetches.Load())

	// the endpoint goes down: known keys keep working, even once they are stale
	srv.down.Store(true)
	clock = clock.Add(10 * time.Minute)
	_, ok, err = j.Authenticate(bearer(old.sign(t, claims("bob", 2*time.Hour))))
	require.NoError(t, err)
	require.True(t, ok)
	require.EqualValues(t, 3, srv.fetches.Load(), "a stale set is refreshed")
}

func TestJWTRemoteKeysNeverFetched(t *testing.T) {
	ed := newEd(t, "k1")
	srv := newJWKSServer(t, jwks(t, ed))
	srv.down.Store(true)
	j, err := NewJWT(JWTConfig{Keys: srv.URL, Client: func(*url.URL) *http.Client { return srv.Client() }})
	require.NoError(t, err, "a JWKS endpoint that is down does not stop the start")
	_, ok, err := j.Authenticate(bearer(ed.sign(t, claims("alice", time.Hour))))
	require.False(t, ok)
	require.True(t, errors.Is(err, ErrKeysUnavailable), "got %v", err)

	srv.down.Store(false)
	j.keys.(*remoteKeys).triedAt = time.Time{}
	p, ok, err := j.Authenticate(bearer(ed.sign(t, claims("alice", time.Hour))))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "alice", p.ID)
}

func TestJWTCacheHonoursExpiry(t *testing.T) {
	ed := newEd(t, "")
	j, err := NewJWT(JWTConfig{Keys: writeFile(t, "k.pem", pemOf(t, ed)), Leeway: time.Second})
	require.NoError(t, err)
	tok := ed.sign(t, claims("alice", time.Minute))
	_, err = j.Verify(context.Background(), tok)
	require.NoError(t, err)
	clock := time.Now().Add(2 * time.Minute)
	j.now = func() time.Time { return clock }
	_, err = j.Verify(context.Background(), tok)
	var ae *Error
	require.ErrorAs(t, err, &ae)
	require.Contains(t, ae.Reason, "expired")
}

// benchJWT is a verifier with one Ed25519 key and a token it accepts.
func benchJWT(b *testing.B) (*JWT, string) {
	t := &testing.T{}
	ed := newEd(t, "")
	j, err := NewJWT(JWTConfig{Keys: writeFileB(b, "k.pem", pemOf(t, ed))})
	if err != nil {
		b.Fatal(err)
	}
	return j, ed.sign(t, claims("alice", time.Hour))
}

// BenchmarkVerifyCached is the per-request cost of jwt mode once a client's token was
// seen: hash, cache lookup, expiry check.
func BenchmarkVerifyCached(b *testing.B) {
	j, tok := benchJWT(b)
	ctx := context.Background()
	if _, err := j.Verify(ctx, tok); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := j.Verify(ctx, tok); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyUncached is the cost of a token seen for the first time (an Ed25519
// signature check).
func BenchmarkVerifyUncached(b *testing.B) {
	j, tok := benchJWT(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		clear(j.cache)
		if _, err := j.Verify(ctx, tok); err != nil {
			b.Fatal(err)
		}
	}
}

func writeFileB(b *testing.B, name string, data []byte) string {
	p := filepath.Join(b.TempDir(), name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		b.Fatal(err)
	}
	return p
}

// TestJWTSubjectTakenLiterally: a token's subject is never trimmed, decoded or folded
// into another principal; look-alikes with control, format or space characters are
// refused (issue 24, finding 5).
func TestJWTSubjectTakenLiterally(t *testing.T) {
	ed := newEd(t, "ed")
	j, err := NewJWT(JWTConfig{Keys: writeFile(t, "keys.json", jwks(t, ed))})
	require.NoError(t, err)
	as := func(sub string) (principal.Principal, error) {
		p, _, err := j.Authenticate(bearer(ed.sign(t, claims(sub, time.Hour))))
		return p, err
	}
	p, err := as("service:ops")
	require.NoError(t, err)
	require.Equal(t, principal.Principal{Kind: "service", ID: "ops"}, p)

	for _, sub := range []string{" service:ops", "service:ops ", "service:ops\u00a0", "\u00a0service:ops",
		"service:ops\u200b", "service:\u202eops", "service:ops\t", "service:ops\n", "service:o\u0000ps",
		"service:ops\u3000", "service:ops\u2028", "user:", "agent:", "service:", "system:"} {
		_, err := as(sub)
		var ae *Error
		require.ErrorAs(t, err, &ae, "subject %q must be refused", sub)
	}
	// the URL form is not decoded: it is a user whose id is that literal string
	p, err = as("/principal/service%3Aops")
	require.NoError(t, err)
	require.Equal(t, principal.Principal{Kind: "user", ID: "/principal/service%3Aops"}, p)
	require.NotEqual(t, "service:ops", p.String())
	// case is significant: not the service kind
	p, err = as("Service:ops")
	require.NoError(t, err)
	require.Equal(t, principal.Principal{Kind: "user", ID: "Service:ops"}, p)
}
