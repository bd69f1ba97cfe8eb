package runtime

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

const (
	maxWakeBody = 4 << 20
	// signatureSkew is how far a signature's time may be from this machine's clock.
	signatureSkew = 5 * time.Minute
)

// Webhook is the http.Handler to point a type's webhook dispatch at (RegisterTypes
// with a webhook URL, or a subscription of your own). It accepts only wakes signed by
// the server (Ed25519, checked against the server's JWKS), answers at once, and handles
// the wake in the background under ctx; a wake delivered again while it is being handled
// is not handled twice, and beyond ExternalOptions.MaxWakes wakes at once it answers 503
// (the server retries with backoff).
func (r *External) Webhook(ctx context.Context) http.Handler {
	var mu sync.Mutex
	inFlight := map[string]bool{}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost {
			http.Error(w, "POST a wake", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxWakeBody))
		if err != nil {
			http.Error(w, "wake too large", http.StatusRequestEntityTooLarge)
			return
		}
		if err := r.keys.verify(req.Context(), req.Header.Get("Webhook-Signature"), body); err != nil {
			r.log.Warn("refused an unsigned or badly signed wake", zap.Error(err))
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var wk externalWake
		if err := json.Unmarshal(body, &wk); err != nil {
			http.Error(w, "not a wake", http.StatusBadRequest)
			return
		}
		if err := wk.normalize(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		key := wk.WakeID + "/" + strconv.FormatInt(wk.Epoch, 10)
		mu.Lock()
		if !inFlight[key] && len(inFlight) >= r.opts.MaxWakes {
			mu.Unlock()
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many wakes in progress", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}")) // accepted; the done callback follows
		if inFlight[key] {
			mu.Unlock()
			return
		}
		inFlight[key] = true
		mu.Unlock()
		go func() {
			defer func() { mu.Lock(); delete(inFlight, key); mu.Unlock() }()
			if err := r.handleWake(ctx, &wk); err != nil && ctx.Err() == nil {
				r.log.Warn("wake not finished; the server will wake again", zap.String("wake", wk.WakeID), zap.Error(err))
			}
		}()
	})
}

// jwksCache holds the server's webhook signing keys, fetched on first use and again
// when a signature names a key it does not know (at most once a second).
type jwksCache struct {
	r       *External
	mu      sync.Mutex
	keys    map[string]ed25519.PublicKey
	fetched time.Time
}

func (k *jwksCache) verify(ctx context.Context, header string, body []byte) error {
	sig, err := parseSignature(header, time.Now())
	if err != nil {
		return err
	}
	key, err := k.key(ctx, sig.kid)
	if err != nil {
		return err
	}
	if !ed25519.Verify(key, append([]byte(sig.t+"."), body...), sig.sig) {
		return errors.New("the signature does not match")
	}
	return nil
}

// signature is a parsed Webhook-Signature header: t=<unix seconds>,kid=<key id>,
// ed25519=<base64url signature of "<t>.<body>">.
type signature struct {
	t, kid string
	sig    []byte
}

// parseSignature reads a Webhook-Signature header, refusing one whose time is more than
// signatureSkew away from now (a replay, or a wrong clock).
func parseSignature(header string, now time.Time) (*signature, error) {
	parts := map[string]string{}
	for p := range strings.SplitSeq(header, ",") {
		if name, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok {
			parts[name] = v
		}
	}
	ts, err := strconv.ParseInt(parts["t"], 10, 64)
	if err != nil || parts["kid"] == "" || parts["ed25519"] == "" {
		return nil, errors.New("no Webhook-Signature: t=…,kid=…,ed25519=…")
	}
	if d := now.Sub(time.Unix(ts, 0)); d > signatureSkew || d < -signatureSkew {
		return nil, errors.New("the signature's time is too far from now (replayed, or a clock is wrong)")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts["ed25519"])
	if err != nil || len(sig) != ed25519.SignatureSize {
		return nil, errors.New("the signature is not a base64url Ed25519 signature")
	}
	return &signature{t: parts["t"], kid: parts["kid"], sig: sig}, nil
}

func (k *jwksCache) key(ctx context.Context, kid string) (ed25519.PublicKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if key, ok := k.keys[kid]; ok {
		return key, nil
	}
	if time.Since(k.fetched) < time.Second {
		return nil, errors.New("unknown signing key " + kid)
	}
	k.fetched = time.Now()
	var doc struct {
		Keys []struct {
			Kid string `json:"kid"`
			Kty string `json:"kty"`
			Crv string `json:"crv"`
			X   string `json:"x"`
		} `json:"keys"`
	}
	if _, err := k.r.call(ctx, http.MethodGet, "/__ds/jwks.json", "", nil, &doc); err != nil {
		return nil, err
	}
	k.keys = map[string]ed25519.PublicKey{}
	for _, j := range doc.Keys {
		x, err := base64.RawURLEncoding.DecodeString(j.X)
		if j.Kty == "OKP" && j.Crv == "Ed25519" && err == nil && len(x) == ed25519.PublicKeySize {
			k.keys[j.Kid] = ed25519.PublicKey(x)
		}
	}
	if key, ok := k.keys[kid]; ok {
		return key, nil
	}
	return nil, errors.New("unknown signing key " + kid)
}
