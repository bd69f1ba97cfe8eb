package runtime_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/entityd/entityd/server"
)

// TestServerSpeaksHTTP2OverTLS: with a certificate and key the server answers HTTPS and
// negotiates HTTP/2, so a browser multiplexes a page's live requests (Electric's UI
// holds six) over one connection instead of queueing the rest behind HTTP/1.1's six
// per origin; a plain HTTP request to it is refused; a half configuration never starts.
func TestServerSpeaksHTTP2OverTLS(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t)
	dbURL := pgtestURL(t)

	half := server.New(server.Config{DatabaseURL: dbURL, Addr: "127.0.0.1:0", Logger: zap.NewNop(), TLSCertFile: certFile})
	require.ErrorContains(t, half.Run(context.Background()), "both a certificate and a key")

	ready := make(chan net.Addr, 1)
	srv := server.New(server.Config{DatabaseURL: dbURL, Addr: "127.0.0.1:0", Logger: zap.NewNop(),
		ShutdownTimeout: 5 * time.Second, TLSCertFile: certFile, TLSKeyFile: keyFile,
		Ready: func(a net.Addr) { ready <- a }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	var addr net.Addr
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("server ended: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("server not ready")
	}

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	t.Cleanup(client.CloseIdleConnections)
	resp, err := client.Get("https://" + addr.String() + "/_electric/health")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, 2, resp.ProtoMajor, "HTTP/2 is negotiated")

	plain, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + addr.String() + "/_electric/health")
	require.NoError(t, err)
	plain.Body.Close()
	require.Equal(t, http.StatusBadRequest, plain.StatusCode, "plain HTTP to the TLS port is refused")
}

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns a pool that
// trusts it.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "entityd test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
