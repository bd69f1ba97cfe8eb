package dssub

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/entityd/entityd/streamdb"
)

// lockClass is the first key of dssub's transaction advisory locks.
const (
	lockClass     int32 = 0x64737562 // "dsub"
	lockKeys      int32 = 1
	lockReconcile int32 = 2
)

var b64 = base64.RawURLEncoding

// keyring holds the keys loaded from ds_keys: the Ed25519 key that signs webhook requests
// and the HMAC keys of callback/claim tokens. Every process loads the same rows, so any
// process verifies what another signed, and restarts keep the published JWKS valid.
type keyring struct {
	signKID string
	sign    ed25519.PrivateKey
	jwks    []byte   // the JWKS document of every unretired Ed25519 key
	hmacs   [][]byte // newest first; the first signs tokens
}

type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
}

// thumbprintKID is "ds_" + the RFC 7638 thumbprint of an Ed25519 public key.
func thumbprintKID(pub ed25519.PublicKey) string {
	canonical := `{"crv":"Ed25519","kty":"OKP","x":"` + b64.EncodeToString(pub) + `"}`
	sum := sha256.Sum256([]byte(canonical))
	return "ds_" + b64.EncodeToString(sum[:])
}

// loadKeys reads the key material, creating it the first time (under an advisory lock, so
// processes starting together agree on one key).
func loadKeys(ctx context.Context, pool streamdb.DB) (*keyring, error) {
	kr := &keyring{}
	var jwks []jwk
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, sqlLockKeys, lockClass, lockKeys); err != nil {
			return err
		}
		kr, jwks = &keyring{}, nil
		load := func() error {
			rows, err := tx.Query(ctx, sqlSelectKeys)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var kid, kind string
				var secret, public []byte
				if err := rows.Scan(&kid, &kind, &secret, &public); err != nil {
					return err
				}
				switch kind {
				case "ed25519":
					if len(secret) != ed25519.SeedSize || len(public) != ed25519.PublicKeySize {
						return fmt.Errorf("dssub: key %s is not an Ed25519 seed and public key", kid)
					}
					if kr.sign == nil {
						kr.signKID, kr.sign = kid, ed25519.NewKeyFromSeed(secret)
					}
					jwks = append(jwks, jwk{Kty: "OKP", Crv: "Ed25519", X: b64.EncodeToString(public), Kid: kid, Use: "sig", Alg: "EdDSA"})
				case "hmac":
					kr.hmacs = append(kr.hmacs, secret)
				}
			}
			return rows.Err()
		}
		if err := load(); err != nil {
			return err
		}
		created := false
		if kr.sign == nil {
			pub, priv, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, sqlInsertSigningKey,
				thumbprintKID(pub), priv.Seed(), []byte(pub)); err != nil {
				return err
			}
			created = true
		}
		if len(kr.hmacs) == 0 {
			secret := make([]byte, 32)
			if _, err := rand.Read(secret); err != nil {
				return err
			}
			var id [8]byte
			_, _ = rand.Read(id[:])
			if _, err := tx.Exec(ctx, sqlInsertHMACKey,
				"hmac_"+hex.EncodeToString(id[:]), secret); err != nil {
				return err
			}
			created = true
		}
		if created {
			kr, jwks = &keyring{}, nil
			return load()
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("dssub: load keys: %w", err)
	}
	doc, err := json.Marshal(struct {
		Keys []jwk `json:"keys"`
	}{jwks})
	if err != nil {
		return nil, err
	}
	kr.jwks = doc
	return kr, nil
}

// signature is the Webhook-Signature header for body at t:
// t=<unix seconds>,kid=<kid>,ed25519=<base64url signature of "<t>.<body>">.
func (k *keyring) signature(body []byte, t time.Time) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	msg := make([]byte, 0, len(ts)+1+len(body))
	msg = append(append(append(msg, ts...), '.'), body...)
	sig := ed25519.Sign(k.sign, msg)
	return "t=" + ts + ",kid=" + k.signKID + ",ed25519=" + b64.EncodeToString(sig)
}

// tokenClaims is what a callback or claim token is good for: one wake of one subscription.
type tokenClaims struct {
	Sub        string `json:"s"`
	Generation int64  `json:"g"`
	WakeID     string `json:"w"`
	// Primary is the wake's primary stream (relative to the root), which Electric's
	// wake callbacks are about (WakeStream); empty when the wake listed none.
	Primary string `json:"p,omitempty"`
}

// mintToken returns base64url(claims) "." base64url(HMAC-SHA256). Tokens carry their own
// claims so that a token of a finished wake is still recognised, and answered FENCED.
func (k *keyring) mintToken(c tokenClaims) string {
	payload, _ := json.Marshal(c)
	p := b64.EncodeToString(payload)
	return p + "." + b64.EncodeToString(mac(k.hmacs[0], p))
}

// verifyToken checks a token against every unretired HMAC key.
func (k *keyring) verifyToken(token string) (tokenClaims, bool) {
	p, sig, ok := strings.Cut(token, ".")
	if !ok || p == "" || sig == "" {
		return tokenClaims{}, false
	}
	got, err := b64.DecodeString(sig)
	if err != nil {
		return tokenClaims{}, false
	}
	valid := false
	for _, key := range k.hmacs {
		if hmac.Equal(got, mac(key, p)) {
			valid = true
			break
		}
	}
	if !valid {
		return tokenClaims{}, false
	}
	raw, err := b64.DecodeString(p)
	if err != nil {
		return tokenClaims{}, false
	}
	var c tokenClaims
	if err := json.Unmarshal(raw, &c); err != nil {
		return tokenClaims{}, false
	}
	return c, true
}

func mac(key []byte, payload string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(payload))
	return h.Sum(nil)
}
