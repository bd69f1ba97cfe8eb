package authn

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"golang.org/x/sync/singleflight"
)

// publicKey is one verification key; kid is "" when its source names none (PEM).
type publicKey struct {
	kid string
	key crypto.PublicKey
}

// keySource yields the keys that may have signed a token: those with its kid, or every
// key when the token names none.
type keySource interface {
	keys(ctx context.Context, kid string) ([]publicKey, error)
}

// algFits reports whether key can verify alg (the only three accepted): a token's
// header cannot make a key be used with another algorithm than its own.
func algFits(alg string, key crypto.PublicKey) bool {
	switch k := key.(type) {
	case ed25519.PublicKey:
		return alg == "EdDSA"
	case *ecdsa.PublicKey:
		return alg == "ES256" && k.Curve == elliptic.P256()
	case *rsa.PublicKey:
		return alg == "RS256" && k.N.BitLen() >= 2048
	}
	return false
}

// usable keeps the asymmetric public keys entityd accepts (a symmetric or private key in
// a key file is an operator mistake, reported at start).
func usable(k any) (crypto.PublicKey, error) {
	switch key := k.(type) {
	case ed25519.PublicKey, *ecdsa.PublicKey:
		return key, nil
	case *rsa.PublicKey:
		if key.N.BitLen() < 2048 {
			return nil, errors.New("RSA keys must have at least 2048 bits")
		}
		return key, nil
	case []byte:
		return nil, errors.New("symmetric (HMAC) keys are refused; use EdDSA, ES256 or RS256 public keys")
	case ed25519.PrivateKey, *ecdsa.PrivateKey, *rsa.PrivateKey:
		return nil, errors.New("the key file holds a private key; give entityd only public keys")
	}
	return nil, fmt.Errorf("unsupported key type %T", k)
}

// staticKeys are keys read once (a PEM file).
type staticKeys []publicKey

func (s staticKeys) keys(context.Context, string) ([]publicKey, error) { return s, nil }

// parsePEM reads one or more PUBLIC KEY blocks.
func parsePEM(data []byte) (staticKeys, error) {
	var out staticKeys
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "PUBLIC KEY" {
			return nil, fmt.Errorf("PEM block %q: only PUBLIC KEY blocks are accepted", block.Type)
		}
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("PEM public key: %w", err)
		}
		key, err := usable(k)
		if err != nil {
			return nil, err
		}
		out = append(out, publicKey{key: key})
	}
	if len(out) == 0 {
		return nil, errors.New("no PUBLIC KEY block")
	}
	return out, nil
}

// parseJWKS reads a JSON Web Key Set; keys meant for encryption are skipped.
func parseJWKS(data []byte) ([]publicKey, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("JWKS: %w", err)
	}
	var out []publicKey
	for _, k := range set.Keys {
		if k.Use == "enc" {
			continue
		}
		key, err := usable(k.Key)
		if err != nil {
			return nil, fmt.Errorf("JWKS key %q: %w", k.KeyID, err)
		}
		out = append(out, publicKey{kid: k.KeyID, key: key})
	}
	if len(out) == 0 {
		return nil, errors.New("JWKS holds no signing key")
	}
	return out, nil
}

// byKid keeps the keys a token with kid may be checked against.
func byKid(all []publicKey, kid string) []publicKey {
	if kid == "" {
		return all
	}
	var out []publicKey
	for _, k := range all {
		if k.kid == kid || k.kid == "" {
			out = append(out, k)
		}
	}
	return out
}

// remoteKeys is a JWKS fetched over HTTP and cached: refreshed when older than maxAge,
// and when a token names a kid it does not hold (key rotation), at most once per
// minRefresh so that tokens with made-up kids cannot make it hammer the endpoint. When
// the endpoint is down the keys it served last keep working.
type remoteKeys struct {
	url        string
	client     func(*url.URL) *http.Client
	maxAge     time.Duration
	minRefresh time.Duration
	now        func() time.Time

	mu        sync.Mutex
	cached    []publicKey
	fetchedAt time.Time // last success
	triedAt   time.Time // last attempt
	lastErr   error
	group     singleflight.Group
}

const maxJWKSBytes = 1 << 20

func (rk *remoteKeys) keys(ctx context.Context, kid string) ([]publicKey, error) {
	rk.mu.Lock()
	cached, fresh := rk.cached, rk.now().Sub(rk.fetchedAt) < rk.maxAge
	found := len(byKid(cached, kid)) > 0
	mayTry := rk.now().Sub(rk.triedAt) >= rk.minRefresh
	rk.mu.Unlock()
	if found && fresh {
		return byKid(cached, kid), nil
	}
	if mayTry || len(cached) == 0 {
		if _, err, _ := rk.group.Do("fetch", func() (any, error) { return nil, rk.refresh(ctx) }); err != nil && !found {
			return nil, fmt.Errorf("%w: %v", ErrKeysUnavailable, err)
		}
	}
	rk.mu.Lock()
	defer rk.mu.Unlock()
	if len(rk.cached) == 0 && rk.lastErr != nil {
		return nil, fmt.Errorf("%w: %v", ErrKeysUnavailable, rk.lastErr)
	}
	return byKid(rk.cached, kid), nil
}

// refresh fetches the key set once.
func (rk *remoteKeys) refresh(ctx context.Context) error {
	rk.mu.Lock()
	rk.triedAt = rk.now()
	rk.mu.Unlock()
	keys, err := rk.fetch(ctx)
	rk.mu.Lock()
	defer rk.mu.Unlock()
	rk.lastErr = err
	if err == nil {
		rk.cached, rk.fetchedAt = keys, rk.now()
	}
	return err
}

func (rk *remoteKeys) fetch(ctx context.Context) ([]publicKey, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rk.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := rk.client(req.URL).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("JWKS endpoint answered %d", resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxJWKSBytes {
		return nil, errors.New("JWKS larger than 1 MiB")
	}
	return parseJWKS(data)
}

// fileKeys is a JWKS file, read again when a token names a kid it does not hold and the
// file changed (rotation without a restart).
type fileKeys struct {
	path string

	mu      sync.Mutex
	cached  []publicKey
	modTime time.Time
}

func (fk *fileKeys) keys(_ context.Context, kid string) ([]publicKey, error) {
	fk.mu.Lock()
	defer fk.mu.Unlock()
	if ks := byKid(fk.cached, kid); len(ks) > 0 {
		return ks, nil
	}
	if err := fk.reload(); err != nil {
		return nil, err
	}
	return byKid(fk.cached, kid), nil
}

func (fk *fileKeys) reload() error {
	st, err := os.Stat(fk.path)
	if err != nil {
		return err
	}
	if !fk.modTime.IsZero() && st.ModTime().Equal(fk.modTime) {
		return nil
	}
	data, err := os.ReadFile(fk.path)
	if err != nil {
		return err
	}
	keys, err := parseJWKS(data)
	if err != nil {
		return err
	}
	fk.cached, fk.modTime = keys, st.ModTime()
	return nil
}

// openKeys opens the key source spec names: an https (or, for a host the outbound rules
// allow, http) URL of a JWKS, or a file holding PEM public keys or a JWKS.
func openKeys(spec string, client func(*url.URL) *http.Client) (keySource, error) {
	if strings.HasPrefix(spec, "https://") || strings.HasPrefix(spec, "http://") {
		if _, err := url.Parse(spec); err != nil {
			return nil, fmt.Errorf("ENTITYD_JWT_KEYS: %w", err)
		}
		return &remoteKeys{url: spec, client: client, maxAge: 5 * time.Minute, minRefresh: 10 * time.Second,
			now: time.Now}, nil
	}
	data, err := os.ReadFile(spec)
	if err != nil {
		return nil, fmt.Errorf("ENTITYD_JWT_KEYS: %w", err)
	}
	if strings.HasPrefix(strings.TrimSpace(string(data)), "{") {
		fk := &fileKeys{path: spec}
		if err := fk.reload(); err != nil {
			return nil, fmt.Errorf("ENTITYD_JWT_KEYS %s: %w", spec, err)
		}
		return fk, nil
	}
	keys, err := parsePEM(data)
	if err != nil {
		return nil, fmt.Errorf("ENTITYD_JWT_KEYS %s: %w", spec, err)
	}
	return keys, nil
}
