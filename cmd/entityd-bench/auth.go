package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// runJWT makes a key pair for a jwt-mode server under test: it writes the public key
// (PEM) where -pub says and prints a token for -sub signed with the private key, which
// is then forgotten. For benchmarks only.
func runJWT(args []string) error {
	fs := flag.NewFlagSet("jwt", flag.ExitOnError)
	pubPath := fs.String("pub", "", "write the PEM public key here (the server's ENTITYD_JWT_KEYS)")
	sub := fs.String("sub", "user:bench", "the token's principal (sub)")
	ttl := fs.Duration("ttl", 24*time.Hour, "the token's lifetime")
	_ = fs.Parse(args)
	if *pubPath == "" {
		return fmt.Errorf("-pub is required")
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return err
	}
	if err := os.WriteFile(*pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		return err
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{"sub": *sub,
		"exp": time.Now().Add(*ttl).Unix(), "iat": time.Now().Unix()}).SignedString(priv)
	if err != nil {
		return err
	}
	fmt.Println(tok)
	return nil
}

// bearer adds "Authorization: Bearer <token>" to every request (no-op without a token).
type bearer struct {
	next  http.RoundTripper
	token string
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// withToken makes c send the token on every request.
func withToken(c *http.Client, token string) *http.Client {
	if token != "" {
		c.Transport = bearer{next: c.Transport, token: token}
	}
	return c
}
