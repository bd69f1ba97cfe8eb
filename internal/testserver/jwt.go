package testserver

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/entityd/entityd/internal/authn"
)

// JWTIssuer and JWTAudience are what a JWTKey's authenticator checks and its tokens carry.
const (
	JWTIssuer   = "https://idp.test"
	JWTAudience = "entityd"
)

// JWTKey is an Ed25519 key for a jwt-mode test server: Auth goes in Options.API.Auth,
// and Token signs a token for a principal.
type JWTKey struct {
	Auth authn.Authenticator
	priv ed25519.PrivateKey
}

// NewJWTKey makes a key and the authenticator that trusts it.
func NewJWTKey(t testing.TB) *JWTKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	auth, err := authn.NewJWT(authn.JWTConfig{Keys: keyFile, Issuer: JWTIssuer, Audience: JWTAudience})
	if err != nil {
		t.Fatal(err)
	}
	return &JWTKey{Auth: auth, priv: priv}
}

// Token is a token for principal sub ("kind:id"), valid for an hour.
func (k *JWTKey) Token(t testing.TB, sub string) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{"sub": sub, "iss": JWTIssuer,
		"aud": JWTAudience, "exp": time.Now().Add(time.Hour).Unix()}).SignedString(k.priv)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// InboxSenders reads a main stream's JSON body and returns each inbox message's sender
// ("from"), in order: who a message arrived as.
func InboxSenders(t testing.TB, streamBody []byte) []string {
	t.Helper()
	var events []struct {
		Type  string `json:"type"`
		Value struct {
			From string `json:"from"`
		} `json:"value"`
		Headers struct {
			Operation string `json:"operation"`
		} `json:"headers"`
	}
	if err := json.Unmarshal(streamBody, &events); err != nil {
		t.Fatalf("testserver: not a stream body: %v", err)
	}
	var from []string
	for _, e := range events {
		if e.Type == "inbox" && e.Headers.Operation == "insert" {
			from = append(from, e.Value.From)
		}
	}
	return from
}
