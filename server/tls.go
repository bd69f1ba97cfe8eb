package server

import (
	"crypto/tls"
	"errors"
	"fmt"
)

// tlsConfig loads the certificate and key named in the configuration (nil when neither
// is set: plain HTTP). It runs before the address is taken, so a bad file stops the
// server before it touches the database.
func (s *Server) tlsConfig() (*tls.Config, error) {
	cert, key := s.cfg.TLSCertFile, s.cfg.TLSKeyFile
	if cert == "" && key == "" {
		return nil, nil
	}
	if cert == "" || key == "" {
		return nil, errors.New("TLS needs both a certificate and a key (--tls-cert and --tls-key)")
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("load the TLS certificate %s and key %s: %w", cert, key, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}
